with source as (
    {{ typed_source('workspaces') }}
),

renamed as (
    select
        id as workspace_id,
        name as workspace_name,
        plan as plan_name,
        credits__balance as credits_balance,
        counts__campaigns as api_count_campaigns,
        counts__email_accounts as api_count_email_accounts,
        counts__lists as api_count_lists,
        created_at,
        synced_at,
        observed_at
    from source
    -- the current version where the table keeps history (scd2); every row of a merge table
    where _dlt_valid_to is null
)

select * from renamed
