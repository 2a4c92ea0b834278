-- Per workspace and UTC day: the credit balance and the credits used, from the workspace's stored
-- versions (scd2: a new version whenever the balance changes), with the day's sends and positive replies.
with history as (
    select * from {{ ref('stg_workspace_history') }}
),

workspaces as (
    select workspace_id, observed_at from {{ ref('stg_workspaces') }}
),

clock as (
    select as_of_at from {{ ref('stg_service_clock') }}
),

versions as (
    -- a merge table's row (no validity yet) counts from the last observation, else the service's now
    select
        history.workspace_id,
        history.credits_balance,
        coalesce(history.valid_from_at, clock.as_of_at) as from_at,
        history.valid_to_at,
        history.is_current
    from history
    cross join clock
    where coalesce(history.valid_from_at, clock.as_of_at) is not null
),

changes as (
    select
        versions.*,
        {{ utc_date('from_at') }} as change_date,
        lag(credits_balance) over (partition by workspace_id order by from_at) as previous_balance
    from versions
),

spans as (
    select
        changes.workspace_id,
        min(changes.change_date) as first_day,
        case
            when max(case when changes.is_current then 1 else 0 end) = 1 then null
            else {{ utc_date('max(changes.valid_to_at)') }}
        end as removed_day
    from changes
    group by changes.workspace_id
),

bounds as (
    -- a workspace's series ends at its removal, else at its last observation (observed_at) or the
    -- service's now, never before its newest version
    select
        spans.workspace_id,
        spans.first_day,
        coalesce(
            spans.removed_day,
            greatest(
                spans.first_day,
                {{ utc_date('coalesce(workspaces.observed_at, clock.as_of_at)') }}
            )
        ) as last_day
    from spans
    cross join clock
    left join workspaces on spans.workspace_id = workspaces.workspace_id
),

days as (
    select
        bounds.workspace_id,
        bounds.first_day,
        cast(series.series_day as date) as activity_date
    from bounds
    cross join lateral generate_series(
        cast(bounds.first_day as timestamp), cast(bounds.last_day as timestamp), interval '1 day'
    ) as series (series_day)
),

day_changes as (
    select
        workspace_id,
        change_date,
        count(*) as count_versions,
        -- the balance at the end of the day: the newest version stored that day
        {{ arg_max('credits_balance', 'from_at') }} as end_balance,
        sum(case when previous_balance > credits_balance then previous_balance - credits_balance else 0 end)
            as credits_used,
        sum(case when credits_balance > previous_balance then credits_balance - previous_balance else 0 end)
            as credits_added
    from changes
    group by workspace_id, change_date
),

sends as (
    select workspace_id, send_date, sum(count_sent) as count_sent
    from {{ ref('stg_campaign_daily_sends') }}
    group by workspace_id, send_date
),

positives as (
    select workspace_id, {{ utc_date('received_at') }} as received_date, count(*) as count_positive_replies
    from {{ ref('stg_replies') }}
    where is_positive and received_at is not null
    group by workspace_id, {{ utc_date('received_at') }}
),

with_changes as (
    select
        days.workspace_id,
        days.activity_date,
        days.first_day,
        day_changes.end_balance,
        day_changes.credits_used,
        day_changes.credits_added,
        day_changes.count_versions,
        -- days without a new version carry the balance forward: number the runs of days after each change
        count(day_changes.end_balance) over (
            partition by days.workspace_id order by days.activity_date
        ) as balance_run
    from days
    left join day_changes
        on days.workspace_id = day_changes.workspace_id and days.activity_date = day_changes.change_date
),

daily as (
    select
        with_changes.workspace_id,
        with_changes.activity_date,
        max(with_changes.end_balance) over (
            partition by with_changes.workspace_id, with_changes.balance_run
        ) as credits_balance,
        -- the first day's use is unknown: the balance before the first stored version is not
        case when with_changes.activity_date > with_changes.first_day then coalesce(with_changes.credits_used, 0) end
            as credits_used,
        case when with_changes.activity_date > with_changes.first_day then coalesce(with_changes.credits_added, 0) end
            as credits_added,
        coalesce(with_changes.count_versions, 0) as count_versions,
        coalesce(sends.count_sent, 0) as count_sent,
        coalesce(positives.count_positive_replies, 0) as count_positive_replies
    from with_changes
    left join sends
        on with_changes.workspace_id = sends.workspace_id and with_changes.activity_date = sends.send_date
    left join positives
        on with_changes.workspace_id = positives.workspace_id
        and with_changes.activity_date = positives.received_date
),

cumulative as (
    select
        daily.*,
        sum(credits_used) over (partition by workspace_id order by activity_date) as cumulative_credits_used,
        sum(case when credits_used is not null then count_positive_replies end) over (
            partition by workspace_id order by activity_date
        ) as cumulative_positive_replies
    from daily
),

final as (
    select
        workspace_id,
        activity_date,
        credits_balance,
        cast(credits_used as {{ dbt.type_bigint() }}) as credits_used,
        cast(credits_added as {{ dbt.type_bigint() }}) as credits_added,
        cast(count_versions as {{ dbt.type_bigint() }}) as count_versions,
        cast(count_sent as {{ dbt.type_bigint() }}) as count_sent,
        cast(count_positive_replies as {{ dbt.type_bigint() }}) as count_positive_replies,
        case when count_positive_replies > 0 then
            {{ round_to('cast(credits_used as ' ~ type_double() ~ ') / count_positive_replies', 2) }}
        end as credits_per_positive_reply,
        cast(cumulative_credits_used as {{ dbt.type_bigint() }}) as cumulative_credits_used,
        cast(cumulative_positive_replies as {{ dbt.type_bigint() }}) as cumulative_positive_replies,
        case when cumulative_positive_replies > 0 then
            {{ round_to('cast(cumulative_credits_used as ' ~ type_double() ~ ') / cumulative_positive_replies', 2) }}
        end as cumulative_credits_per_positive_reply
    from cumulative
)

select * from final
order by workspace_id, activity_date
