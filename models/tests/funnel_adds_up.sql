-- recipient statuses add up to the campaign's recipients (API totals) for campaigns with API stats
with funnel as (
    select campaign_id, sum(count_recipients) as funnel_recipients
    from reporting.recipient_funnel
    group by campaign_id
)
select
    p.campaign_id,
    p.count_recipients,
    coalesce(f.funnel_recipients, 0) as funnel_recipients
from reporting.campaign_performance p
left join funnel f using (campaign_id)
where p.has_api_stats and p.count_recipients <> coalesce(f.funnel_recipients, 0)
