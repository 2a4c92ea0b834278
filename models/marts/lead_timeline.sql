{{ config(
    materialized='incremental',
    incremental_strategy='delete+insert',
    unique_key='event_id',
    pre_hook="{{ delete_touched_leads('touched_event_leads') }}",
) }}

-- Every webhook event about a lead, in order, from outreach.events (deliveries loaded from the spool).
-- incremental (macros/incremental.sql): a build renumbers only the leads with events loaded since the last one
with events as (
    select events.*
    from {{ ref('stg_events') }} as events
    {{ join_touched_leads('events') }}
),

lead_events as (
    -- lead.* events name a recipient; campaign.completed does not and is left out
    select * from events
    where event_key like 'lead.%'
),

final as (
    select
        event_id,
        workspace_id,
        lead_email,
        lead_id,
        campaign_id,
        event_key,
        created_at as event_at,
        {{ utc_date('created_at') }} as event_date,
        received_at,
        reply_type,
        reply_class,
        cast(row_number() over (
            partition by workspace_id, lead_email order by created_at, event_id
        ) as {{ dbt.type_bigint() }}) as event_number
    from lead_events
)

select * from final
order by workspace_id, lead_email, event_number
