with source as (
    {{ typed_source('workspaces') }}
),

renamed as (
    -- one row per stored version; a merge table (no history) gives one current row per workspace
    select
        id as workspace_id,
        name as workspace_name,
        plan as plan_name,
        credits__balance as credits_balance,
        _dlt_valid_to is null as is_current,
        observed_at,
        coalesce(_dlt_valid_from, observed_at) as valid_from_at,
        _dlt_valid_to as valid_to_at
    from source
)

select * from renamed
