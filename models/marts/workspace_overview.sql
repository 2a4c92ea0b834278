-- one row per workspace
with workspaces as (
    select * from reporting.stg_workspaces
),
campaigns as (
    select * from reporting.campaign_performance
),
mailboxes as (
    select * from reporting.mailbox_health
),
replies as (
    select * from reporting.stg_replies
),
campaign_facts as (
    select
        workspace_id,
        count(*) as count_campaigns,
        count(*) filter (where campaign_status = 'active') as count_active_campaigns,
        sum(count_recipients)::bigint as count_recipients,
        sum(count_sent)::bigint as count_sent,
        sum(count_delivered)::bigint as count_delivered,
        sum(count_opened)::bigint as count_opened,
        sum(count_replied)::bigint as count_replied,
        sum(count_positive_replies)::bigint as count_positive_replies,
        sum(count_bounced)::bigint as count_bounced,
        sum(count_unsubscribed)::bigint as count_unsubscribed,
    from campaigns
    group by workspace_id
),
mailbox_facts as (
    select
        workspace_id,
        count(*) as count_mailboxes,
        count(*) filter (where is_active) as count_active_mailboxes,
        round(avg(reputation_score), 2) as avg_reputation_score,
        sum(sent_today)::bigint as sent_today,
        (sum(daily_send_limit) filter (where is_active))::bigint as daily_send_capacity,
    from mailboxes
    group by workspace_id
),
reply_facts as (
    select
        workspace_id,
        count(*) as count_replies,
        count(*) filter (where not is_read) as count_unread_replies,
    from replies
    group by workspace_id
),
final as (
    select
        workspaces.workspace_id,
        workspaces.workspace_name,
        workspaces.plan_name,
        workspaces.credits_balance,
        coalesce(c.count_campaigns, 0) as count_campaigns,
        coalesce(c.count_active_campaigns, 0) as count_active_campaigns,
        coalesce(m.count_mailboxes, 0) as count_mailboxes,
        coalesce(m.count_active_mailboxes, 0) as count_active_mailboxes,
        coalesce(c.count_recipients, 0) as count_recipients,
        coalesce(c.count_sent, 0) as count_sent,
        coalesce(c.count_delivered, 0) as count_delivered,
        coalesce(c.count_opened, 0) as count_opened,
        coalesce(c.count_replied, 0) as count_replied,
        coalesce(c.count_positive_replies, 0) as count_positive_replies,
        coalesce(c.count_bounced, 0) as count_bounced,
        coalesce(c.count_unsubscribed, 0) as count_unsubscribed,
        coalesce(r.count_replies, 0) as count_replies,
        coalesce(r.count_unread_replies, 0) as count_unread_replies,
        reporting.pct(c.count_opened, c.count_delivered) as open_rate,
        reporting.pct(c.count_replied, c.count_delivered) as reply_rate,
        reporting.pct(c.count_positive_replies, c.count_delivered) as positive_reply_rate,
        reporting.pct(c.count_bounced, c.count_sent) as bounce_rate,
        m.avg_reputation_score,
        coalesce(m.sent_today, 0) as sent_today,
        coalesce(m.daily_send_capacity, 0) as daily_send_capacity,
        workspaces.created_at,
        workspaces.synced_at,
    from workspaces
    left join campaign_facts c using (workspace_id)
    left join mailbox_facts m using (workspace_id)
    left join reply_facts r using (workspace_id)
)
select * from final
order by workspace_name, workspace_id
