-- one row per campaign and recipient status present in the campaign
with campaigns as (
    select campaign_id, workspace_id from reporting.stg_campaigns
),
recipients as (
    select * from reporting.stg_campaign_recipients
),
by_status as (
    select
        campaign_id,
        recipient_status,
        count(*) as count_recipients,
        count(opened_at) as count_opened,
        count(clicked_at) as count_clicked,
        count(*) filter (where current_step >= 2) as count_reached_follow_up,
    from recipients
    group by all
),
final as (
    select
        by_status.campaign_id,
        campaigns.workspace_id,
        by_status.recipient_status,
        case by_status.recipient_status
            when 'pending' then 1 when 'active' then 2 when 'sent' then 3 when 'completed' then 4
            when 'replied' then 5 when 'bounced' then 6 when 'unsubscribed' then 7 else 99
        end as status_order,
        by_status.count_recipients,
        reporting.pct(
            by_status.count_recipients,
            sum(by_status.count_recipients) over (partition by by_status.campaign_id)
        ) as pct_of_recipients,
        by_status.count_opened,
        by_status.count_clicked,
        by_status.count_reached_follow_up,
    from by_status
    join campaigns using (campaign_id)
)
select * from final
order by workspace_id, campaign_id, status_order, recipient_status
