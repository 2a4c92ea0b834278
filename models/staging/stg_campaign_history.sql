-- one row per campaign version (raw: outreach.campaigns, scd2 on id); every version, for trends
with contract as (
    select
        null::varchar as id,
        null::varchar as workspace_id,
        null::varchar as name,
        null::varchar as status,
        null::varchar as campaign_type,
        null::varchar as schedule_type,
        null::json as subject_lines,
        null::json as email_bodies,
        null::varchar as send_window__start,
        null::varchar as send_window__end,
        null::json as send_window__days,
        null::varchar as send_window__timezone,
        null::bigint as follow_up__delay_days,
        null::bigint as follow_up__max,
        null::bigint as stats__total_leads,
        null::bigint as stats__sent,
        null::bigint as stats__opened,
        null::bigint as stats__clicked,
        null::bigint as stats__replied,
        null::bigint as stats__bounced,
        null::boolean as follow_up__enabled,
        null::boolean as stop_on_reply,
        null::timestamptz as scheduled_at,
        null::timestamptz as created_at,
        null::timestamptz as _dlt_valid_from,
        null::timestamptz as _dlt_valid_to
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.campaigns
),
renamed as (
    select
        id as campaign_id,
        workspace_id,
        name as campaign_name,
        status as campaign_status,
        campaign_type,
        schedule_type,
        send_window__start as send_window_start,
        send_window__end as send_window_end,
        send_window__days::varchar as send_days,
        send_window__timezone as send_timezone,
        subject_lines::varchar as subject_lines,
        coalesce(json_array_length(subject_lines::json), 0)::bigint as count_subject_lines,
        coalesce(json_array_length(email_bodies::json), 0)::bigint as count_email_bodies,
        follow_up__delay_days as follow_up_delay_days,
        follow_up__max as max_follow_ups,
        stats__total_leads as running_total_leads,
        stats__sent as running_sent,
        stats__opened as running_opened,
        stats__clicked as running_clicked,
        stats__replied as running_replied,
        stats__bounced as running_bounced,
        coalesce(follow_up__enabled, false) as is_follow_up_enabled,
        coalesce(stop_on_reply, false) as is_stop_on_reply,
        _dlt_valid_to is null as is_current,
        scheduled_at,
        created_at,
        _dlt_valid_from as valid_from_at,
        _dlt_valid_to as valid_to_at,
    from source
)
select * from renamed
