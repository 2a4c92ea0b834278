-- Per campaign and day: opens, clicks, unsubscribes, bounces and replies as the webhook events saw them,
-- beside the API's (the recipients' timestamps for the day, the stats endpoint's totals for the campaign).
with campaigns as (
    select campaign_id, workspace_id from {{ ref('stg_campaigns') }}
),

events as (
    select campaign_id, event_key, created_at from {{ ref('stg_events') }}
    where event_key in ('lead.opened', 'lead.clicked', 'lead.unsubscribed', 'lead.bounced', 'lead.replied')
        and created_at is not null
),

-- not materialized: read more than once, the CTE would first be copied whole, every column of every row
recipients as not materialized (
    select * from {{ ref('stg_campaign_recipients') }}
),

stats as (
    select * from {{ ref('stg_campaign_stats') }}
),

activity as (
    -- one row per counted thing, with a 1 in the column it counts
    select
        campaign_id,
        {{ utc_date('created_at') }} as activity_date,
        case when event_key = 'lead.opened' then 1 else 0 end as ev_opened,
        case when event_key = 'lead.clicked' then 1 else 0 end as ev_clicked,
        case when event_key = 'lead.unsubscribed' then 1 else 0 end as ev_unsubscribed,
        case when event_key = 'lead.bounced' then 1 else 0 end as ev_bounced,
        case when event_key = 'lead.replied' then 1 else 0 end as ev_replied,
        0 as api_opened, 0 as api_clicked, 0 as api_bounced, 0 as api_replied
    from events
    union all
    select campaign_id, {{ utc_date('opened_at') }}, 0, 0, 0, 0, 0, 1, 0, 0, 0
    from recipients where opened_at is not null
    union all
    select campaign_id, {{ utc_date('clicked_at') }}, 0, 0, 0, 0, 0, 0, 1, 0, 0
    from recipients where clicked_at is not null
    union all
    select campaign_id, {{ utc_date('bounced_at') }}, 0, 0, 0, 0, 0, 0, 0, 1, 0
    from recipients where bounced_at is not null
    union all
    select campaign_id, {{ utc_date('replied_at') }}, 0, 0, 0, 0, 0, 0, 0, 0, 1
    from recipients where replied_at is not null
),

daily as (
    select
        campaign_id,
        activity_date,
        cast(sum(ev_opened) as {{ dbt.type_bigint() }}) as events_opened,
        cast(sum(ev_clicked) as {{ dbt.type_bigint() }}) as events_clicked,
        cast(sum(ev_unsubscribed) as {{ dbt.type_bigint() }}) as events_unsubscribed,
        cast(sum(ev_bounced) as {{ dbt.type_bigint() }}) as events_bounced,
        cast(sum(ev_replied) as {{ dbt.type_bigint() }}) as events_replied,
        cast(sum(api_opened) as {{ dbt.type_bigint() }}) as api_opened,
        cast(sum(api_clicked) as {{ dbt.type_bigint() }}) as api_clicked,
        cast(sum(api_bounced) as {{ dbt.type_bigint() }}) as api_bounced,
        cast(sum(api_replied) as {{ dbt.type_bigint() }}) as api_replied
    from activity
    group by campaign_id, activity_date
),

final as (
    select
        daily.campaign_id,
        campaigns.workspace_id,
        daily.activity_date,
        daily.events_opened,
        daily.events_clicked,
        daily.events_unsubscribed,
        daily.events_bounced,
        daily.events_replied,
        daily.api_opened,
        daily.api_clicked,
        daily.api_bounced,
        daily.api_replied,
        {%- for kind in ['opened', 'clicked', 'unsubscribed', 'bounced'] %}
        cast(sum(daily.events_{{ kind }}) over (
            partition by daily.campaign_id order by daily.activity_date
        ) as {{ dbt.type_bigint() }}) as cumulative_events_{{ kind }},
        {%- endfor %}
        stats.total_opened as api_total_opened,
        stats.total_clicked as api_total_clicked,
        stats.total_unsubscribed as api_total_unsubscribed,
        stats.total_bounced as api_total_bounced
    from daily
    inner join campaigns on daily.campaign_id = campaigns.campaign_id
    left join stats on daily.campaign_id = stats.campaign_id
)

select * from final
order by workspace_id, campaign_id, activity_date
