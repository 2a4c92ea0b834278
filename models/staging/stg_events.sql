-- one row per webhook delivery received (raw: outreach.events, loaded from the spool)
with contract as (
    select
        null::varchar as event_id,
        null::varchar as event,
        null::varchar as workspace_id,
        null::varchar as campaign_id,
        null::varchar as lead_id,
        null::varchar as email,
        null::varchar as reply_type,
        null::timestamptz as created_at,
        null::timestamptz as received_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.events
),
campaign_workspaces as (
    select campaign_id, any_value(workspace_id) as campaign_workspace_id
    from reporting.stg_campaign_history
    group by campaign_id
),
renamed as (
    select
        event_id,
        -- null when the receiver's secret is not tied to a workspace: take the campaign's
        coalesce(source.workspace_id, campaign_workspaces.campaign_workspace_id) as workspace_id,
        campaign_id,
        lead_id,
        event as event_key,
        lower(trim(email)) as lead_email,
        reply_type,
        created_at,
        received_at,
    from source
    left join campaign_workspaces using (campaign_id)
)
select * from renamed
