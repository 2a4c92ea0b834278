-- foreign keys resolve (rows = orphans)
select 'campaign_performance.workspace_id' as relation, p.workspace_id as orphan
from reporting.campaign_performance p anti join reporting.workspace_overview w using (workspace_id)
union all
select 'mailbox_health.workspace_id', m.workspace_id
from reporting.mailbox_health m anti join reporting.workspace_overview w using (workspace_id)
union all
select 'campaign_daily.campaign_id', d.campaign_id
from reporting.campaign_daily d anti join reporting.campaign_performance p using (campaign_id)
union all
select 'variant_performance.campaign_id', v.campaign_id
from reporting.variant_performance v anti join reporting.campaign_performance p using (campaign_id)
union all
select 'reply_outcomes.campaign_id', r.campaign_id
from reporting.reply_outcomes r anti join reporting.campaign_performance p using (campaign_id)
union all
select 'recipient_funnel.campaign_id', f.campaign_id
from reporting.recipient_funnel f anti join reporting.campaign_performance p using (campaign_id)
union all
select 'followup_steps.campaign_id', s.campaign_id
from reporting.followup_steps s anti join reporting.campaign_performance p using (campaign_id)
union all
select 'mailbox_daily.email_account_id', d.email_account_id
from reporting.mailbox_daily d anti join reporting.stg_email_account_history h using (email_account_id)
union all
-- a reply belongs to a campaign the warehouse has seen (current or past version)
select 'stg_replies.campaign_id', r.campaign_id
from reporting.stg_replies r anti join reporting.stg_campaign_history c using (campaign_id)
union all
-- a campaign belongs to the workspace its rows say
select 'campaign_performance.workspace_id matches stats', p.campaign_id
from reporting.campaign_performance p
join reporting.stg_campaign_stats s using (campaign_id)
where s.workspace_id <> p.workspace_id
