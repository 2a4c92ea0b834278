with source as (
    {{ typed_source('events') }}
),

campaign_workspaces as (
    -- the receiver's secret may not be tied to a workspace: then the event takes its campaign's
    select
        id as campaign_id,
        min(workspace_id) as campaign_workspace_id
    from {{ source('outreach', 'campaigns') }}
    group by id
),

renamed as (
    select
        source.event_id,
        coalesce(source.workspace_id, campaign_workspaces.campaign_workspace_id) as workspace_id,
        source.campaign_id,
        source.lead_id,
        source.event as event_key,
        {{ lead_email('source.email') }} as lead_email,
        nullif(trim(source.reply_type), '') as reply_type,
        case when source.event = 'lead.replied' then {{ reply_class('source.reply_type') }} end as reply_class,
        source.created_at,
        source.received_at
    from source
    left join campaign_workspaces
        on source.campaign_id = campaign_workspaces.campaign_id
)

select * from renamed
