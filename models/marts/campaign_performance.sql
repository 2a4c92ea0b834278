-- one row per campaign the API still returns
with campaigns as (
    select * from reporting.stg_campaigns
),
stats as (
    select * from reporting.stg_campaign_stats
),
recipients as (
    select * from reporting.stg_campaign_recipients
),
replies as (
    select * from reporting.stg_replies
),
daily_sends as (
    select * from reporting.stg_campaign_daily_sends
),
recipient_facts as (
    select
        campaign_id,
        count(*) as count_recipient_rows,
        count(*) filter (where current_step >= 2) as count_reached_follow_up,
        max(current_step) as max_step_reached,
        min(last_sent_at) as min_last_sent_at,
        avg(current_step) filter (where current_step > 0) as avg_step_reached,
        median(date_diff('second', last_sent_at, replied_at) / 3600.0)
            filter (where replied_at >= last_sent_at) as median_hours_to_reply,
    from recipients
    group by campaign_id
),
reply_facts as (
    select
        campaign_id,
        count(*) as count_replies,
        count(distinct lead_email) filter (where is_positive) as count_positive_replies,
        min(received_at) as first_reply_at,
        max(received_at) as last_reply_at,
    from replies
    group by campaign_id
),
send_facts as (
    select
        campaign_id,
        min(send_date) filter (where count_sent > 0) as first_send_date,
        max(send_date) filter (where count_sent > 0) as last_send_date,
    from daily_sends
    group by campaign_id
),
totals as (
    select
        campaigns.*,
        coalesce(stats.total_recipients, campaigns.running_total_leads, 0) as count_recipients,
        coalesce(stats.total_sent, campaigns.running_sent, 0) as count_sent,
        coalesce(stats.total_delivered,
            coalesce(campaigns.running_sent, 0) - coalesce(campaigns.running_bounced, 0)) as count_delivered,
        coalesce(stats.total_opened, campaigns.running_opened, 0) as count_opened,
        coalesce(stats.total_clicked, campaigns.running_clicked, 0) as count_clicked,
        coalesce(stats.total_replied, campaigns.running_replied, 0) as count_replied,
        coalesce(stats.total_bounced, campaigns.running_bounced, 0) as count_bounced,
        coalesce(stats.total_unsubscribed, 0) as count_unsubscribed,
        coalesce(stats.total_pending, 0) as count_pending,
        stats.campaign_id is not null as has_api_stats,
    from campaigns
    left join stats using (campaign_id)
),
final as (
    select
        totals.campaign_id,
        totals.workspace_id,
        totals.campaign_name,
        totals.campaign_status,
        totals.campaign_type,
        totals.count_subject_lines as count_variants,
        totals.count_subject_lines > 1 as is_ab_test,
        totals.is_follow_up_enabled,
        totals.max_follow_ups,
        totals.count_recipients,
        totals.count_sent,
        totals.count_delivered,
        totals.count_opened,
        totals.count_clicked,
        totals.count_replied,
        coalesce(reply_facts.count_positive_replies, 0) as count_positive_replies,
        totals.count_bounced,
        totals.count_unsubscribed,
        totals.count_pending,
        coalesce(reply_facts.count_replies, 0) as count_replies,
        reporting.pct(totals.count_delivered, totals.count_sent) as delivery_rate,
        reporting.pct(totals.count_opened, totals.count_delivered) as open_rate,
        reporting.pct(totals.count_clicked, totals.count_delivered) as click_rate,
        reporting.pct(totals.count_replied, totals.count_delivered) as reply_rate,
        reporting.pct(coalesce(reply_facts.count_positive_replies, 0), totals.count_delivered)
            as positive_reply_rate,
        reporting.pct(totals.count_bounced, totals.count_sent) as bounce_rate,
        reporting.pct(totals.count_unsubscribed, totals.count_delivered) as unsubscribe_rate,
        coalesce(recipient_facts.count_reached_follow_up, 0) as count_reached_follow_up,
        coalesce(recipient_facts.max_step_reached, 0) as max_step_reached,
        round(recipient_facts.avg_step_reached, 2) as avg_step_reached,
        round(recipient_facts.median_hours_to_reply, 2) as median_hours_to_reply,
        totals.has_api_stats,
        send_facts.first_send_date,
        send_facts.last_send_date,
        totals.created_at,
        least(timezone('UTC', send_facts.first_send_date::timestamp), recipient_facts.min_last_sent_at)
            as first_sent_at,
        reply_facts.first_reply_at,
        reply_facts.last_reply_at,
        round(date_diff('second',
            least(timezone('UTC', send_facts.first_send_date::timestamp), recipient_facts.min_last_sent_at),
            reply_facts.first_reply_at) / 3600.0, 2) as hours_to_first_reply,
    from totals
    left join recipient_facts using (campaign_id)
    left join reply_facts using (campaign_id)
    left join send_facts using (campaign_id)
)
select * from final
order by workspace_id, campaign_id
