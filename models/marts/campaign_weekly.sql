-- Per campaign and ISO week (Monday to Sunday, UTC days): messages sent, reply messages by class, bounces.
with campaigns as (
    select campaign_id, workspace_id from {{ ref('stg_campaigns') }}
),

daily_sends as (
    select * from {{ ref('stg_campaign_daily_sends') }}
),

recipients as (
    select campaign_id, bounced_at from {{ ref('stg_campaign_recipients') }}
    where bounced_at is not null
),

replies as (
    select * from {{ ref('stg_replies') }}
    where received_at is not null
),

activity as (
    select
        campaign_id, send_date as activity_date, count_sent as sent,
        0 as replies, 0 as human, 0 as positive, 0 as auto, 0 as bounced, 1 as observed
    from daily_sends
    union all
    select
        campaign_id, {{ utc_date('received_at') }}, 0, 1,
        case when {{ is_human_reply_class('reply_class') }} then 1 else 0 end,
        case when reply_class = 'positive' then 1 else 0 end,
        case when reply_class = 'auto_reply' then 1 else 0 end,
        0, 0
    from replies
    union all
    select campaign_id, {{ utc_date('bounced_at') }}, 0, 0, 0, 0, 0, 1, 0
    from recipients
),

weekly as (
    select
        campaign_id,
        {{ iso_week_start('activity_date') }} as week_start,
        cast(count(distinct case when observed = 1 then activity_date end) as {{ dbt.type_bigint() }})
            as count_observed_days,
        cast(sum(sent) as {{ dbt.type_bigint() }}) as count_sent,
        cast(sum(replies) as {{ dbt.type_bigint() }}) as count_replies,
        cast(sum(human) as {{ dbt.type_bigint() }}) as count_human_replies,
        cast(sum(positive) as {{ dbt.type_bigint() }}) as count_positive_replies,
        cast(sum(auto) as {{ dbt.type_bigint() }}) as count_auto_replies,
        cast(sum(bounced) as {{ dbt.type_bigint() }}) as count_bounced
    from activity
    group by campaign_id, {{ iso_week_start('activity_date') }}
),

final as (
    select
        weekly.campaign_id,
        campaigns.workspace_id,
        weekly.week_start,
        {{ iso_year('weekly.week_start') }} as iso_year,
        {{ iso_week('weekly.week_start') }} as iso_week,
        weekly.count_observed_days,
        -- messages sent on the week's observed days; null when the send history covers none of them
        case when weekly.count_observed_days > 0 then weekly.count_sent end as count_sent,
        weekly.count_replies,
        weekly.count_human_replies,
        weekly.count_positive_replies,
        weekly.count_auto_replies,
        weekly.count_bounced
    from weekly
    inner join campaigns on weekly.campaign_id = campaigns.campaign_id
    -- the grain: a week with any send, reply or bounce (observed zero-send days alone make no row)
    where weekly.count_sent > 0 or weekly.count_replies > 0 or weekly.count_bounced > 0
)

select * from final
order by workspace_id, campaign_id, week_start
