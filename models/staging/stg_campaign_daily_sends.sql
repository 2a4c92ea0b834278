-- one row per campaign and day with messages sent (raw: outreach.campaign_daily_sends, accumulating)
with contract as (
    select
        null::varchar as campaign_id,
        null::varchar as workspace_id,
        null::date as "date",
        null::bigint as sent
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.campaign_daily_sends
),
renamed as (
    select
        campaign_id,
        workspace_id,
        "date"::date as send_date,
        coalesce(sent, 0) as count_sent,
    from source
)
select * from renamed
