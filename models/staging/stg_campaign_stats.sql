-- one row per campaign with API statistics (raw: outreach.campaign_stats, merge on campaign_id)
with contract as (
    select
        null::varchar as campaign_id,
        null::varchar as workspace_id,
        null::bigint as totals__recipients,
        null::bigint as totals__sent,
        null::bigint as totals__delivered,
        null::bigint as totals__opened,
        null::bigint as totals__clicked,
        null::bigint as totals__replied,
        null::bigint as totals__bounced,
        null::bigint as totals__unsubscribed,
        null::bigint as totals__pending,
        null::bigint as totals__failed,
        null::double as rates__open,
        null::double as rates__click,
        null::double as rates__reply,
        null::double as rates__bounce,
        null::double as rates__unsubscribe,
        null::double as rates__progress,
        null::timestamptz as synced_at,
        null::timestamptz as deleted_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.campaign_stats
),
renamed as (
    select
        campaign_id,
        workspace_id,
        totals__recipients as total_recipients,
        totals__sent as total_sent,
        totals__delivered as total_delivered,
        totals__opened as total_opened,
        totals__clicked as total_clicked,
        totals__replied as total_replied,
        totals__bounced as total_bounced,
        totals__unsubscribed as total_unsubscribed,
        totals__pending as total_pending,
        totals__failed as total_failed,
        rates__open as api_open_rate,
        rates__click as api_click_rate,
        rates__reply as api_reply_rate,
        rates__bounce as api_bounce_rate,
        rates__unsubscribe as api_unsubscribe_rate,
        rates__progress as api_progress_rate,
        synced_at,
    from source
    where deleted_at is null
)
select * from renamed
