-- A campaign belongs to the workspace its stats row says (rows = campaigns where they disagree).
select
    performance.campaign_id,
    performance.workspace_id,
    stats.workspace_id as stats_workspace_id
from {{ ref('campaign_performance') }} as performance
inner join {{ ref('stg_campaign_stats') }} as stats
    on performance.campaign_id = stats.campaign_id
where stats.workspace_id <> performance.workspace_id
