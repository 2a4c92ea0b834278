with campaigns as (
    select campaign_id, workspace_id, {{ utc_date('created_at') }} as created_date from {{ ref('stg_campaigns') }}
),

daily_sends as (
    select * from {{ ref('stg_campaign_daily_sends') }}
),

-- not materialized: read more than once, the CTE would first be copied whole, every column of every row
recipients as not materialized (
    select * from {{ ref('stg_campaign_recipients') }}
),

replies as (
    select * from {{ ref('stg_replies') }}
),

activity as (
    -- one row per counted thing, with a 1 in the column it counts
    select campaign_id, send_date as activity_date, count_sent as sent,
        0 as opened, 0 as clicked, 0 as replied, 0 as bounced, 0 as received, 0 as positive_received,
        1 as observed
    from daily_sends
    union all
    select campaign_id, {{ utc_date('opened_at') }}, 0, 1, 0, 0, 0, 0, 0, 0
    from recipients where opened_at is not null
    union all
    select campaign_id, {{ utc_date('clicked_at') }}, 0, 0, 1, 0, 0, 0, 0, 0
    from recipients where clicked_at is not null
    union all
    select campaign_id, {{ utc_date('replied_at') }}, 0, 0, 0, 1, 0, 0, 0, 0
    from recipients where replied_at is not null
    union all
    select campaign_id, {{ utc_date('bounced_at') }}, 0, 0, 0, 0, 1, 0, 0, 0
    from recipients where bounced_at is not null
    union all
    select campaign_id, {{ utc_date('received_at') }}, 0, 0, 0, 0, 0, 1, case when is_positive then 1 else 0 end, 0
    from replies where received_at is not null
),

daily as (
    select
        campaign_id,
        activity_date,
        max(observed) = 1 as is_send_observed,
        cast(sum(sent) as {{ dbt.type_bigint() }}) as count_sent,
        cast(sum(opened) as {{ dbt.type_bigint() }}) as count_opened,
        cast(sum(clicked) as {{ dbt.type_bigint() }}) as count_clicked,
        cast(sum(replied) as {{ dbt.type_bigint() }}) as count_replied,
        cast(sum(bounced) as {{ dbt.type_bigint() }}) as count_bounced,
        cast(sum(received) as {{ dbt.type_bigint() }}) as count_replies_received,
        cast(sum(positive_received) as {{ dbt.type_bigint() }}) as count_positive_replies_received
    from activity
    group by campaign_id, activity_date
),

final as (
    select
        daily.campaign_id,
        campaigns.workspace_id,
        daily.activity_date,
        daily.is_send_observed,
        -- sends are known only on days the daily send history covers: null (unknown), never 0, elsewhere
        case when daily.is_send_observed then daily.count_sent end as count_sent,
        daily.count_opened,
        daily.count_clicked,
        daily.count_replied,
        daily.count_bounced,
        daily.count_replies_received,
        daily.count_positive_replies_received,
        case when daily.is_send_observed then cast(sum(daily.count_sent) over (
            partition by daily.campaign_id order by daily.activity_date
        ) as {{ dbt.type_bigint() }}) end as cumulative_sent
    from daily
    inner join campaigns on daily.campaign_id = campaigns.campaign_id
    -- the grain: a day on which something happened, or an observed day of the campaign's life (an observed
    -- zero is a fact); an observed zero before the campaign existed is the API's padding, not history
    where daily.count_sent > 0 or daily.count_opened > 0 or daily.count_clicked > 0 or daily.count_replied > 0
        or daily.count_bounced > 0 or daily.count_replies_received > 0
        or (daily.is_send_observed and daily.activity_date >= campaigns.created_date)
)

select * from final
order by workspace_id, campaign_id, activity_date
