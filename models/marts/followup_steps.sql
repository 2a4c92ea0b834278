-- one row per campaign and sequence step reached (0 = not contacted yet, 1 = first email, 2+ = follow-ups)
with campaigns as (
    select campaign_id, workspace_id from reporting.stg_campaigns
),
recipients as (
    select * from reporting.stg_campaign_recipients
),
by_step as (
    select
        campaign_id,
        current_step,
        count(*) as count_recipients,
        count(*) filter (where recipient_status = 'replied') as count_replied,
    from recipients
    group by all
),
final as (
    select
        by_step.campaign_id,
        campaigns.workspace_id,
        by_step.current_step,
        greatest(by_step.current_step - 1, 0) as follow_ups_sent,
        by_step.count_recipients,
        reporting.pct(
            by_step.count_recipients,
            sum(by_step.count_recipients) over (partition by by_step.campaign_id)
        ) as pct_of_recipients,
        by_step.count_replied,
        reporting.pct(by_step.count_replied, by_step.count_recipients) as reply_rate,
    from by_step
    join campaigns using (campaign_id)
)
select * from final
order by workspace_id, campaign_id, current_step
