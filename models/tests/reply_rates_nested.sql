-- human_reply_rate and positive_reply_rate count subsets of reply_rate's recipients over its denominator,
-- so neither exceeds it, in every mart that has them (rows = breaches).
select 'campaign_performance' as model, campaign_id as key_value, reply_rate, human_reply_rate, positive_reply_rate
from {{ ref('campaign_performance') }}
where human_reply_rate > reply_rate or positive_reply_rate > reply_rate
union all
select 'workspace_overview', workspace_id, reply_rate, human_reply_rate, positive_reply_rate
from {{ ref('workspace_overview') }}
where human_reply_rate > reply_rate or positive_reply_rate > reply_rate
union all
select 'send_time_performance', workspace_id, reply_rate, human_reply_rate, null
from {{ ref('send_time_performance') }}
where human_reply_rate > reply_rate
{%- for days in [7, 14, 28] %}
union all
select 'launch_cohorts', cast(launch_week as {{ dbt.type_string() }}), reply_rate_{{ days }}d, null, positive_reply_rate_{{ days }}d
from {{ ref('launch_cohorts') }}
where positive_reply_rate_{{ days }}d > reply_rate_{{ days }}d
{%- endfor %}
