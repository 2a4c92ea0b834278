-- one row per campaign and reply_type (the AI classification of replies)
with campaigns as (
    select campaign_id, workspace_id from reporting.stg_campaigns
),
replies as (
    select * from reporting.stg_replies
),
by_type as (
    select
        campaign_id,
        reply_type,
        bool_or(is_positive) as is_positive,
        count(*) as count_replies,
        count(*) filter (where not is_read) as count_unread,
        count(distinct lead_email) as count_leads,
        min(received_at) as first_received_at,
        max(received_at) as last_received_at,
    from replies
    group by all
),
final as (
    select
        by_type.campaign_id,
        campaigns.workspace_id,
        by_type.reply_type,
        by_type.is_positive,
        by_type.count_replies,
        reporting.pct(
            by_type.count_replies,
            sum(by_type.count_replies) over (partition by by_type.campaign_id)
        ) as pct_of_replies,
        by_type.count_unread,
        by_type.count_leads,
        by_type.first_received_at,
        by_type.last_received_at,
    from by_type
    join campaigns using (campaign_id)
)
select * from final
order by workspace_id, campaign_id, reply_type
