-- one row per campaign recipient the API still returns (raw: outreach.campaign_recipients)
with contract as (
    select
        null::varchar as id,
        null::varchar as workspace_id,
        null::varchar as campaign_id,
        null::varchar as email,
        null::varchar as first_name,
        null::varchar as last_name,
        null::varchar as company,
        null::varchar as status,
        null::bigint as current_step,
        null::timestamptz as last_sent_at,
        null::timestamptz as opened_at,
        null::timestamptz as clicked_at,
        null::timestamptz as replied_at,
        null::timestamptz as bounced_at,
        null::timestamptz as deleted_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.campaign_recipients
),
renamed as (
    select
        id as recipient_id,
        workspace_id,
        campaign_id,
        lower(trim(email)) as lead_email,
        first_name,
        last_name,
        company,
        status as recipient_status,
        coalesce(current_step, 0) as current_step,
        last_sent_at,
        opened_at,
        clicked_at,
        replied_at,
        bounced_at,
    from source
    where deleted_at is null
)
select * from renamed
