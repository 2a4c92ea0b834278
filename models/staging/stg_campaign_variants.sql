-- one row per campaign and subject variant (raw: outreach.campaign_variants)
with contract as (
    select
        null::varchar as campaign_id,
        null::varchar as workspace_id,
        null::bigint as "index",
        null::varchar as subject,
        null::bigint as sent,
        null::bigint as replied,
        null::double as reply_rate,
        null::timestamptz as deleted_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.campaign_variants
),
renamed as (
    select
        campaign_id,
        workspace_id,
        "index" as variant_index,
        subject,
        coalesce(sent, 0) as count_sent,
        coalesce(replied, 0) as count_replied,
        reply_rate as api_reply_rate,
    from source
    where deleted_at is null
)
select * from renamed
