-- one row per webhook delivery received (raw: outreach.events, loaded from the spool)
with contract as (
    select
        null::varchar as event_id,
        null::varchar as event,
        null::varchar as workspace_id,
        null::varchar as campaign_id,
        null::varchar as lead_id,
        null::varchar as email,
        null::varchar as reply_type,
        null::timestamptz as created_at,
        null::timestamptz as received_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.events
),
renamed as (
    select
        event_id,
        workspace_id,
        campaign_id,
        lead_id,
        event as event_key,
        lower(trim(email)) as lead_email,
        reply_type,
        created_at,
        received_at,
    from source
)
select * from renamed
