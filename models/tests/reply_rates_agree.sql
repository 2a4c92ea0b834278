-- The explicitly named reply rates equal the `reply_rate` column each mart keeps for compatibility
-- (rows = disagreements): campaign and workspace over delivered, variant over sent, step over recipients.
select 'campaign_performance' as model, campaign_id as key_value
from {{ ref('campaign_performance') }}
where coalesce(reply_rate, -1) <> coalesce(reply_rate_of_delivered, -1)
union all
select 'workspace_overview', workspace_id
from {{ ref('workspace_overview') }}
where coalesce(reply_rate, -1) <> coalesce(reply_rate_of_delivered, -1)
union all
select 'variant_performance', campaign_id
from {{ ref('variant_performance') }}
where coalesce(reply_rate, -1) <> coalesce(reply_rate_of_sent, -1)
union all
select 'followup_steps', campaign_id
from {{ ref('followup_steps') }}
where coalesce(reply_rate, -1) <> coalesce(reply_rate_of_recipients, -1)
