-- one row per workspace (raw: outreach.workspaces, merge on id)
with contract as (
    select
        null::varchar as id,
        null::varchar as name,
        null::varchar as plan,
        null::bigint as credits__balance,
        null::bigint as counts__campaigns,
        null::bigint as counts__email_accounts,
        null::bigint as counts__lists,
        null::timestamptz as created_at,
        null::timestamptz as synced_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.workspaces
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
    from source
)
select * from renamed
