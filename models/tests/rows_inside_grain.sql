-- Daily and weekly marts hold rows only inside the grain their docs state (rows = rows outside it):
-- campaign_daily, a day with activity or an observed day from the campaign's creation on, never after the
-- service's today, with sends null exactly on unobserved days; campaign_weekly, a week with any send,
-- reply or bounce.
with campaigns as (
    select campaign_id, {{ utc_date('created_at') }} as created_date from {{ ref('stg_campaigns') }}
),

clock as (
    select {{ utc_date('as_of_at') }} as today from {{ ref('stg_service_clock') }}
)

select 'campaign_daily' as model, daily.campaign_id, cast(daily.activity_date as {{ dbt.type_string() }}) as period
from {{ ref('campaign_daily') }} as daily
inner join campaigns on daily.campaign_id = campaigns.campaign_id
cross join clock
where daily.activity_date > clock.today
    or (daily.count_sent is null) = daily.is_send_observed
    or (
        coalesce(daily.count_sent, 0) = 0 and daily.count_opened = 0 and daily.count_clicked = 0
        and daily.count_replied = 0 and daily.count_bounced = 0 and daily.count_replies_received = 0
        and not (daily.is_send_observed and daily.activity_date >= campaigns.created_date)
    )
union all
select 'campaign_weekly', campaign_id, cast(week_start as {{ dbt.type_string() }})
from {{ ref('campaign_weekly') }}
where coalesce(count_sent, 0) = 0 and count_replies = 0 and count_bounced = 0
