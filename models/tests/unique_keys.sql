-- every table's key is unique (rows = duplicated keys)
select 'stg_campaigns' as model, campaign_id as key_value, count(*) as n
from reporting.stg_campaigns group by all having count(*) > 1
union all
select 'stg_campaign_recipients', recipient_id, count(*)
from reporting.stg_campaign_recipients group by all having count(*) > 1
union all
-- the API skips duplicates when leads are added, so a lead is a recipient of a campaign at most once
select 'stg_campaign_recipients (campaign_id, lead_email)', campaign_id || ' ' || lead_email, count(*)
from reporting.stg_campaign_recipients group by campaign_id, lead_email having count(*) > 1
union all
select 'stg_replies', reply_id, count(*) from reporting.stg_replies group by all having count(*) > 1
union all
select 'stg_email_accounts', email_account_id, count(*)
from reporting.stg_email_accounts group by all having count(*) > 1
union all
select 'campaign_performance', campaign_id, count(*)
from reporting.campaign_performance group by all having count(*) > 1
union all
select 'campaign_daily', campaign_id || ' ' || activity_date, count(*)
from reporting.campaign_daily group by campaign_id, activity_date having count(*) > 1
union all
select 'variant_performance', campaign_id || ' ' || variant_index, count(*)
from reporting.variant_performance group by campaign_id, variant_index having count(*) > 1
union all
select 'mailbox_health', email_account_id, count(*) from reporting.mailbox_health group by all having count(*) > 1
union all
select 'mailbox_daily', email_account_id || ' ' || activity_date, count(*)
from reporting.mailbox_daily group by email_account_id, activity_date having count(*) > 1
union all
select 'reply_outcomes', campaign_id || ' ' || reply_type, count(*)
from reporting.reply_outcomes group by campaign_id, reply_type having count(*) > 1
union all
select 'recipient_funnel', campaign_id || ' ' || recipient_status, count(*)
from reporting.recipient_funnel group by campaign_id, recipient_status having count(*) > 1
union all
select 'followup_steps', campaign_id || ' ' || current_step, count(*)
from reporting.followup_steps group by campaign_id, current_step having count(*) > 1
union all
select 'workspace_overview', workspace_id, count(*) from reporting.workspace_overview group by all having count(*) > 1
union all
select 'lead_engagement', workspace_id || ' ' || lead_email, count(*)
from reporting.lead_engagement group by workspace_id, lead_email having count(*) > 1
