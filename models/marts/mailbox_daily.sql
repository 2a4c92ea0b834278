-- one row per mailbox and UTC day, from its first observed version to the last load (or its removal)
with history as (
    select * from reporting.stg_email_account_history
),
last_load as (
    select max(valid_from_at) as last_observed_at from history
),
spans as (
    select
        email_account_id,
        any_value(workspace_id) as workspace_id,
        (min(valid_from_at) at time zone 'UTC')::date as first_day,
        case when bool_or(is_current) then null else (max(valid_to_at) at time zone 'UTC')::date end
            as removed_day,
    from history
    group by email_account_id
),
days as (
    select
        spans.email_account_id,
        spans.workspace_id,
        unnest(generate_series(
            spans.first_day,
            coalesce(spans.removed_day, (last_load.last_observed_at at time zone 'UTC')::date),
            interval 1 day
        ))::date as activity_date,
    from spans, last_load
),
versions_per_day as (
    -- every version valid at some moment of the day (valid_from before the day ends, valid_to after it starts)
    select
        days.email_account_id,
        days.workspace_id,
        days.activity_date,
        max(h.sent_today) as max_sent_today,
        arg_max(h.daily_send_limit, h.valid_from_at) as daily_send_limit,
        arg_max(h.reputation_score, h.valid_from_at) as reputation_score,
        arg_max(h.warmup_health_score, h.valid_from_at) as warmup_health_score,
        arg_max(h.is_active, h.valid_from_at) as is_active,
        count(*) filter (where (h.valid_from_at at time zone 'UTC')::date = days.activity_date)
            as count_changes,
    from days
    join history h
        on h.email_account_id = days.email_account_id
        and (h.valid_from_at at time zone 'UTC')::date <= days.activity_date
        and (h.valid_to_at is null or h.valid_to_at at time zone 'UTC' > days.activity_date::timestamp)
    group by all
),
final as (
    select
        email_account_id,
        workspace_id,
        activity_date,
        is_active,
        daily_send_limit,
        max_sent_today,
        reporting.pct(max_sent_today, daily_send_limit) as max_utilisation_pct,
        reputation_score,
        warmup_health_score,
        count_changes,
    from versions_per_day
)
select * from final
order by workspace_id, email_account_id, activity_date
