-- no key column is null (rows = one per model with null keys, with how many)
select * from (
    select 'campaign_performance' as model, count(*) as n from reporting.campaign_performance
    where campaign_id is null or workspace_id is null
    union all
    select 'campaign_daily', count(*) from reporting.campaign_daily
    where campaign_id is null or activity_date is null or workspace_id is null
    union all
    select 'variant_performance', count(*) from reporting.variant_performance
    where campaign_id is null or variant_index is null
    union all
    select 'mailbox_health', count(*) from reporting.mailbox_health
    where email_account_id is null or workspace_id is null
    union all
    select 'mailbox_daily', count(*) from reporting.mailbox_daily
    where email_account_id is null or activity_date is null
    union all
    select 'reply_outcomes', count(*) from reporting.reply_outcomes where campaign_id is null or reply_type is null
    union all
    select 'recipient_funnel', count(*) from reporting.recipient_funnel
    where campaign_id is null or recipient_status is null
    union all
    select 'followup_steps', count(*) from reporting.followup_steps where campaign_id is null or current_step is null
    union all
    select 'workspace_overview', count(*) from reporting.workspace_overview where workspace_id is null
    union all
    select 'lead_engagement', count(*) from reporting.lead_engagement where workspace_id is null or lead_email is null
    union all
    select 'stg_campaign_recipients', count(*) from reporting.stg_campaign_recipients
    where recipient_id is null or campaign_id is null
    union all
    select 'stg_replies', count(*) from reporting.stg_replies where reply_id is null or campaign_id is null
)
where n > 0
