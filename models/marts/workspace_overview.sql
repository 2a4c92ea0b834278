with workspaces as (
    select * from {{ ref('stg_workspaces') }}
),

campaigns as (
    select * from {{ ref('campaign_performance') }}
),

mailboxes as (
    select * from {{ ref('mailbox_health') }}
),

replies as (
    select * from {{ ref('stg_replies') }}
),

campaign_facts as (
    select
        workspace_id,
        count(*) as count_campaigns,
        count(case when campaign_status = 'active' then 1 end) as count_active_campaigns,
        cast(sum(count_recipients) as {{ dbt.type_bigint() }}) as count_recipients,
        cast(sum(count_sent) as {{ dbt.type_bigint() }}) as count_sent,
        cast(sum(count_delivered) as {{ dbt.type_bigint() }}) as count_delivered,
        cast(sum(count_opened) as {{ dbt.type_bigint() }}) as count_opened,
        cast(sum(count_replied) as {{ dbt.type_bigint() }}) as count_replied,
        cast(sum(count_positive_replies) as {{ dbt.type_bigint() }}) as count_positive_replies,
        cast(sum(count_bounced) as {{ dbt.type_bigint() }}) as count_bounced,
        cast(sum(count_unsubscribed) as {{ dbt.type_bigint() }}) as count_unsubscribed,
        cast(sum(count_clicked) as {{ dbt.type_bigint() }}) as count_clicked,
        cast(sum(count_contacted) as {{ dbt.type_bigint() }}) as count_contacted,
        cast(sum(count_human_replied) as {{ dbt.type_bigint() }}) as count_human_replied
    from campaigns
    group by workspace_id
),

mailbox_facts as (
    select
        workspace_id,
        count(*) as count_mailboxes,
        count(case when is_active then 1 end) as count_active_mailboxes,
        {{ round_to('avg(reputation_score)', 2) }} as avg_reputation_score,
        cast(sum(sent_today) as {{ dbt.type_bigint() }}) as sent_today,
        cast(sum(case when is_active then daily_send_limit end) as {{ dbt.type_bigint() }}) as daily_send_capacity
    from mailboxes
    group by workspace_id
),

reply_facts as (
    select
        workspace_id,
        count(*) as count_replies,
        count(case when not is_read then 1 end) as count_unread_replies
    from replies
    group by workspace_id
),

final as (
    select
        workspaces.workspace_id,
        workspaces.workspace_name,
        workspaces.plan_name,
        workspaces.credits_balance,
        coalesce(campaign_facts.count_campaigns, 0) as count_campaigns,
        coalesce(campaign_facts.count_active_campaigns, 0) as count_active_campaigns,
        coalesce(mailbox_facts.count_mailboxes, 0) as count_mailboxes,
        coalesce(mailbox_facts.count_active_mailboxes, 0) as count_active_mailboxes,
        coalesce(campaign_facts.count_recipients, 0) as count_recipients,
        coalesce(campaign_facts.count_sent, 0) as count_sent,
        coalesce(campaign_facts.count_delivered, 0) as count_delivered,
        coalesce(campaign_facts.count_opened, 0) as count_opened,
        coalesce(campaign_facts.count_replied, 0) as count_replied,
        coalesce(campaign_facts.count_positive_replies, 0) as count_positive_replies,
        coalesce(campaign_facts.count_bounced, 0) as count_bounced,
        coalesce(campaign_facts.count_unsubscribed, 0) as count_unsubscribed,
        coalesce(reply_facts.count_replies, 0) as count_replies,
        coalesce(reply_facts.count_unread_replies, 0) as count_unread_replies,
        coalesce(campaign_facts.count_clicked, 0) as count_clicked,
        coalesce(campaign_facts.count_contacted, 0) as count_contacted,
        coalesce(campaign_facts.count_human_replied, 0) as count_human_replied,
        -- the same definitions as campaign_performance's, over the workspace's summed counts
        {{ ratio('campaign_facts.count_opened', 'campaign_facts.count_contacted', '0') }} as open_rate,
        {{ ratio('campaign_facts.count_clicked', 'campaign_facts.count_contacted', '0') }} as click_rate,
        {{ ratio('campaign_facts.count_replied', 'campaign_facts.count_contacted', '0') }} as reply_rate,
        {{ ratio('campaign_facts.count_human_replied', 'campaign_facts.count_contacted', '0') }} as human_reply_rate,
        {{ ratio('campaign_facts.count_positive_replies', 'campaign_facts.count_contacted', '0') }} as positive_reply_rate,
        {{ ratio('campaign_facts.count_bounced', 'campaign_facts.count_contacted', '0') }} as bounce_rate,
        {{ ratio('campaign_facts.count_unsubscribed', 'campaign_facts.count_contacted', '0') }} as unsubscribe_rate,
        {{ ratio('campaign_facts.count_replied', 'campaign_facts.count_delivered') }} as reply_rate_per_delivered_message,
        mailbox_facts.avg_reputation_score,
        coalesce(mailbox_facts.sent_today, 0) as sent_today,
        coalesce(mailbox_facts.daily_send_capacity, 0) as daily_send_capacity,
        workspaces.created_at,
        workspaces.synced_at
    from workspaces
    left join campaign_facts on workspaces.workspace_id = campaign_facts.workspace_id
    left join mailbox_facts on workspaces.workspace_id = mailbox_facts.workspace_id
    left join reply_facts on workspaces.workspace_id = reply_facts.workspace_id
)

select * from final
order by workspace_name, workspace_id
