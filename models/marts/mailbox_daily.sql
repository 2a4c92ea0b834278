-- Days come from the mailbox history's validity (_dlt_valid_from / _dlt_valid_to), which the sync
-- stamps with the service's clock, like campaign_daily's days: one time basis for both series.
with history as (
    select * from {{ ref('stg_email_account_history') }}
),

workspaces as (
    select workspace_id, observed_at from {{ ref('stg_workspaces') }}
),

last_load as (
    select max(valid_from_at) as last_observed_at from history
),

spans as (
    select
        email_account_id,
        min(workspace_id) as workspace_id,
        {{ utc_date('min(valid_from_at)') }} as first_day,
        case
            when max(case when is_current then 1 else 0 end) = 1 then null
            else {{ utc_date('max(valid_to_at)') }}
        end as removed_day
    from history
    group by email_account_id
),

bounds as (
    -- a mailbox's series ends at its removal, else at the last sync (the workspace's observed_at,
    -- or the newest stored version when the sync does not record it)
    select
        spans.email_account_id,
        spans.workspace_id,
        spans.first_day,
        coalesce(
            spans.removed_day,
            {{ utc_date('coalesce(workspaces.observed_at, last_load.last_observed_at)') }}
        ) as last_day
    from spans
    cross join last_load
    left join workspaces on spans.workspace_id = workspaces.workspace_id
),

days as (
    select
        bounds.email_account_id,
        bounds.workspace_id,
        cast(series.series_day as date) as activity_date
    from bounds
    cross join lateral generate_series(
        cast(bounds.first_day as timestamp), cast(bounds.last_day as timestamp), interval '1 day'
    ) as series (series_day)
),

versions_per_day as (
    -- every version valid at some moment of the day (stored before the day ends, replaced after it starts)
    select
        days.email_account_id,
        days.workspace_id,
        days.activity_date,
        max(history.sent_today) as max_sent_today,
        {{ arg_max('history.daily_send_limit', 'history.valid_from_at') }} as daily_send_limit,
        {{ arg_max('history.reputation_score', 'history.valid_from_at') }} as reputation_score,
        {{ arg_max('history.warmup_health_score', 'history.valid_from_at') }} as warmup_health_score,
        {{ arg_max('history.is_active', 'history.valid_from_at') }} as is_active,
        count(case when {{ utc_date('history.valid_from_at') }} = days.activity_date then 1 end) as count_changes
    from days
    inner join history
        on days.email_account_id = history.email_account_id
        and {{ utc_date('history.valid_from_at') }} <= days.activity_date
        and (history.valid_to_at is null or history.valid_to_at > {{ utc_midnight('days.activity_date') }})
    group by days.email_account_id, days.workspace_id, days.activity_date
),

final as (
    select
        email_account_id,
        workspace_id,
        activity_date,
        is_active,
        daily_send_limit,
        max_sent_today,
        {{ pct('max_sent_today', 'daily_send_limit') }} as max_utilisation_pct,
        reputation_score,
        warmup_health_score,
        count_changes
    from versions_per_day
)

select * from final
order by workspace_id, email_account_id, activity_date
