with campaigns as (
    select campaign_id, workspace_id from {{ ref('stg_campaigns') }}
),

recipients as (
    select * from {{ ref('stg_campaign_recipients') }}
),

by_step as (
    select
        campaign_id,
        current_step,
        count(*) as count_recipients,
        count(case when recipient_status = 'replied' then 1 end) as count_replied
    from recipients
    group by campaign_id, current_step
),

with_totals as (
    select
        by_step.*,
        sum(count_recipients) over (partition by campaign_id) as campaign_recipients
    from by_step
),

final as (
    select
        with_totals.campaign_id,
        campaigns.workspace_id,
        with_totals.current_step,
        greatest(with_totals.current_step - 1, 0) as follow_ups_sent,
        with_totals.count_recipients,
        {{ pct('with_totals.count_recipients', 'with_totals.campaign_recipients') }} as pct_of_recipients,
        with_totals.count_replied,
        -- replied recipients over the contacted recipients who stopped at this step (step 0: not contacted)
        case when with_totals.current_step > 0
            then {{ ratio('with_totals.count_replied', 'with_totals.count_recipients') }} end as reply_rate
    from with_totals
    inner join campaigns on with_totals.campaign_id = campaigns.campaign_id
)

select * from final
order by workspace_id, campaign_id, current_step
