-- Per campaign with API stats, the recipient statuses in recipient_funnel add up to the API's
-- totals.recipients (rows = campaigns where they do not).
with funnel as (
    select campaign_id, sum(count_recipients) as funnel_recipients
    from {{ ref('recipient_funnel') }}
    group by campaign_id
)

select
    performance.campaign_id,
    performance.count_recipients,
    coalesce(funnel.funnel_recipients, 0) as funnel_recipients
from {{ ref('campaign_performance') }} as performance
left join funnel on performance.campaign_id = funnel.campaign_id
where performance.has_api_stats
    and performance.count_recipients <> coalesce(funnel.funnel_recipients, 0)
