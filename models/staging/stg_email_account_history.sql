with source as (
    {{ typed_source('email_accounts') }}
),

renamed as (
    select
        id as email_account_id,
        workspace_id,
        lower(email) as mailbox_email,
        display_name,
        provider,
        daily_send_limit,
        sent_today,
        reputation_score,
        -- no warmup, no warmup health: the service reports 0.0 then, which reads as a failing mailbox
        case when coalesce(warmup__enabled, false) then warmup__health_score end as warmup_health_score,
        coalesce(is_active, false) as is_active,
        coalesce(warmup__enabled, false) as is_warmup_enabled,
        _dlt_valid_to is null as is_current,
        created_at,
        _dlt_valid_from as valid_from_at,
        _dlt_valid_to as valid_to_at
    from source
)

select * from renamed
