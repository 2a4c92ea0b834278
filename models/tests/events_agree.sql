-- Per current campaign and event, lead_timeline's events add up to campaign_event_daily's (rows = campaigns
-- and events where they do not).
with timeline as (
    select campaign_id, event_key, count(*) as timeline_events
    from {{ ref('lead_timeline') }}
    where campaign_id in (select campaign_id from {{ ref('campaign_performance') }})
        and event_key in ('lead.opened', 'lead.clicked', 'lead.unsubscribed', 'lead.bounced', 'lead.replied')
        and event_at is not null
    group by campaign_id, event_key
),

daily as (
    {%- set kinds = [('opened', 'lead.opened'), ('clicked', 'lead.clicked'), ('unsubscribed', 'lead.unsubscribed'),
                     ('bounced', 'lead.bounced'), ('replied', 'lead.replied')] %}
    {%- for column, key in kinds %}
    select campaign_id, '{{ key }}' as event_key, sum(events_{{ column }}) as daily_events
    from {{ ref('campaign_event_daily') }}
    group by campaign_id
    {{ 'union all' if not loop.last }}
    {%- endfor %}
)

select
    coalesce(timeline.campaign_id, daily.campaign_id) as campaign_id,
    coalesce(timeline.event_key, daily.event_key) as event_key,
    coalesce(timeline.timeline_events, 0) as timeline_events,
    coalesce(daily.daily_events, 0) as daily_events
from timeline
full outer join daily
    on timeline.campaign_id = daily.campaign_id and timeline.event_key = daily.event_key
where coalesce(timeline.timeline_events, 0) <> coalesce(daily.daily_events, 0)
