-- one row per mailbox version (raw: outreach.email_accounts, scd2 on id); every version, for trends
with contract as (
    select
        null::varchar as id,
        null::varchar as workspace_id,
        null::varchar as email,
        null::varchar as display_name,
        null::varchar as provider,
        null::bigint as daily_send_limit,
        null::bigint as sent_today,
        null::double as reputation_score,
        null::double as warmup__health_score,
        null::boolean as is_active,
        null::boolean as warmup__enabled,
        null::timestamptz as created_at,
        null::timestamptz as _dlt_valid_from,
        null::timestamptz as _dlt_valid_to
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.email_accounts
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
        warmup__health_score as warmup_health_score,
        coalesce(is_active, false) as is_active,
        coalesce(warmup__enabled, false) as is_warmup_enabled,
        _dlt_valid_to is null as is_current,
        created_at,
        _dlt_valid_from as valid_from_at,
        _dlt_valid_to as valid_to_at,
    from source
)
select * from renamed
