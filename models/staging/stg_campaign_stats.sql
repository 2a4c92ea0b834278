with source as (
    {{ typed_source('campaign_stats') }}
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
        synced_at
    from source
    where deleted_at is null
)

select * from renamed
