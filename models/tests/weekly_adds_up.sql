-- Per campaign, campaign_weekly's messages sent and bounces add up to campaign_daily's (rows = campaigns
-- where they do not).
with weekly as (
    select campaign_id, sum(count_sent) as weekly_sent, sum(count_bounced) as weekly_bounced
    from {{ ref('campaign_weekly') }}
    group by campaign_id
),

daily as (
    select campaign_id, sum(count_sent) as daily_sent, sum(count_bounced) as daily_bounced
    from {{ ref('campaign_daily') }}
    group by campaign_id
)

select
    coalesce(weekly.campaign_id, daily.campaign_id) as campaign_id,
    weekly.weekly_sent,
    daily.daily_sent,
    weekly.weekly_bounced,
    daily.daily_bounced
from weekly
full outer join daily on weekly.campaign_id = daily.campaign_id
where coalesce(weekly.weekly_sent, 0) <> coalesce(daily.daily_sent, 0)
    or coalesce(weekly.weekly_bounced, 0) <> coalesce(daily.daily_bounced, 0)
