-- One row per stored version of a workspace's account. The sync keeps the versions in `workspace_history`
-- (scd2, a version whenever the balance, plan, name or counts change) and the current row in `workspaces`.
-- A workspace without any version there (a warehouse synced before the history table existed) falls back
-- to `workspaces`: its own history where that table is scd2, else its one current row (from observed_at).
with history as (
    {{ typed_source('workspace_history') }}
),

workspaces as (
    {{ typed_source('workspaces') }}
),

versions as (
    select
        id as workspace_id,
        name as workspace_name,
        plan as plan_name,
        credits__balance as credits_balance,
        _dlt_valid_to is null as is_current,
        _dlt_valid_from as observed_at,
        _dlt_valid_from as valid_from_at,
        _dlt_valid_to as valid_to_at
    from history
),

fallback as (
    select
        id as workspace_id,
        name as workspace_name,
        plan as plan_name,
        credits__balance as credits_balance,
        _dlt_valid_to is null as is_current,
        observed_at,
        coalesce(_dlt_valid_from, observed_at) as valid_from_at,
        _dlt_valid_to as valid_to_at
    from workspaces
    where id not in (select id from history where id is not null)
)

select * from versions
union all
select * from fallback
