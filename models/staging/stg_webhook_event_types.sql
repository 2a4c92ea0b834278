-- one row per workspace and subscribable webhook event (raw: outreach.webhook_event_types)
with contract as (
    select
        null::varchar as key,
        null::varchar as label,
        null::varchar as workspace_id
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.webhook_event_types
),
renamed as (
    select
        workspace_id,
        key as event_key,
        label as event_label,
    from source
)
select * from renamed
