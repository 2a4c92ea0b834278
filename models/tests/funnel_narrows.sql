-- The recipient funnel never widens: recipients >= contacted >= replied >= human replied >= positive
-- replied, per campaign and per workspace (rows = breaches).
select 'campaign_performance' as model, campaign_id as key_value, count_recipients, count_contacted,
    count_replied, count_human_replied, count_positive_replies
from {{ ref('campaign_performance') }}
where count_contacted > count_recipients or count_replied > count_contacted
    or count_human_replied > count_replied or count_positive_replies > count_human_replied
union all
select 'workspace_overview', workspace_id, count_recipients, count_contacted, count_replied, count_human_replied,
    count_positive_replies
from {{ ref('workspace_overview') }}
where count_contacted > count_recipients or count_replied > count_contacted
    or count_human_replied > count_replied or count_positive_replies > count_human_replied
