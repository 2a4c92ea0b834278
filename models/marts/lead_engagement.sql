-- one row per lead (email address) per workspace, across all of the workspace's campaigns
with recipients as (
    select r.*
    from reporting.stg_campaign_recipients r
    join reporting.stg_campaigns c using (campaign_id)
),
replies as (
    select * from reporting.stg_replies
),
recipient_facts as (
    select
        workspace_id,
        lead_email,
        any_value(first_name) as first_name,
        any_value(last_name) as last_name,
        any_value(company) as company,
        count(*) as count_campaigns,  -- one recipient per lead and campaign (tests/unique_keys.sql)
        count(*) filter (where current_step > 0) as count_campaigns_contacted,
        count(opened_at) as count_campaigns_opened,
        count(clicked_at) as count_campaigns_clicked,
        count(*) filter (where recipient_status = 'replied') as count_campaigns_replied,
        count(*) filter (where recipient_status = 'bounced') as count_campaigns_bounced,
        count(*) filter (where recipient_status = 'unsubscribed') as count_campaigns_unsubscribed,
        max(last_sent_at) as last_contacted_at,
        min(replied_at) as first_replied_at,
    from recipients
    group by workspace_id, lead_email
),
reply_facts as (
    select
        workspace_id,
        lead_email,
        count(*) as count_replies,
        count(*) filter (where is_positive) as count_positive_replies,
        arg_max(reply_type, received_at) as latest_reply_type,
        max(received_at) as last_reply_at,
    from replies
    group by workspace_id, lead_email
),
final as (
    select
        recipient_facts.workspace_id,
        recipient_facts.lead_email,
        recipient_facts.first_name,
        recipient_facts.last_name,
        recipient_facts.company,
        recipient_facts.count_campaigns,
        recipient_facts.count_campaigns_contacted,
        recipient_facts.count_campaigns_opened,
        recipient_facts.count_campaigns_clicked,
        recipient_facts.count_campaigns_replied,
        recipient_facts.count_campaigns_bounced,
        recipient_facts.count_campaigns_unsubscribed,
        coalesce(reply_facts.count_replies, 0) as count_replies,
        coalesce(reply_facts.count_positive_replies, 0) as count_positive_replies,
        reply_facts.latest_reply_type,
        coalesce(reply_facts.count_positive_replies, 0) > 0 as is_positive_lead,
        recipient_facts.last_contacted_at,
        recipient_facts.first_replied_at,
        reply_facts.last_reply_at,
    from recipient_facts
    left join reply_facts using (workspace_id, lead_email)
)
select * from final
