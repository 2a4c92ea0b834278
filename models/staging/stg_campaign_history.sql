with source as (
    {{ typed_source('campaigns') }}
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
        cast(send_window__days as {{ dbt.type_string() }}) as send_days,
        send_window__timezone as send_timezone,
        cast(subject_lines as {{ dbt.type_string() }}) as subject_lines,
        cast(coalesce(json_array_length(cast(subject_lines as json)), 0) as {{ dbt.type_bigint() }}) as count_subject_lines,
        cast(coalesce(json_array_length(cast(email_bodies as json)), 0) as {{ dbt.type_bigint() }}) as count_email_bodies,
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
        _dlt_valid_to as valid_to_at
    from source
)

select * from renamed
