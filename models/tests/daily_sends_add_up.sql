-- Per current campaign, campaign_daily's sends on observed days add up to the daily send history's total
-- (rows = campaigns where they do not).
with history as (
    select sends.campaign_id, sum(sends.count_sent) as history_sent
    from {{ ref('stg_campaign_daily_sends') }} as sends
    inner join {{ ref('campaign_performance') }} as performance on sends.campaign_id = performance.campaign_id
    group by sends.campaign_id
),

daily as (
    select campaign_id, sum(case when is_send_observed then count_sent end) as daily_sent
    from {{ ref('campaign_daily') }}
    group by campaign_id
)

select coalesce(history.campaign_id, daily.campaign_id) as campaign_id, history.history_sent, daily.daily_sent
from history
full outer join daily on history.campaign_id = daily.campaign_id
where coalesce(history.history_sent, 0) <> coalesce(daily.daily_sent, 0)
