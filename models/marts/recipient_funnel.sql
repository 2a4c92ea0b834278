with campaigns as (
    select campaign_id, workspace_id from {{ ref('stg_campaigns') }}
),

recipients as (
    select * from {{ ref('stg_campaign_recipients') }}
),

by_status as (
    select
        campaign_id,
        recipient_status,
        count(*) as count_recipients,
        count(opened_at) as count_opened,
        count(clicked_at) as count_clicked,
        count(case when current_step >= 2 then 1 end) as count_reached_follow_up
    from recipients
    group by campaign_id, recipient_status
),

with_totals as (
    select
        by_status.*,
        sum(count_recipients) over (partition by campaign_id) as campaign_recipients
    from by_status
),

final as (
    select
        with_totals.campaign_id,
        campaigns.workspace_id,
        with_totals.recipient_status,
        -- a status outside the spec's list keeps its own row, ordered last (99)
        case with_totals.recipient_status
            when 'pending' then 1 when 'active' then 2 when 'sent' then 3 when 'completed' then 4
            when 'replied' then 5 when 'bounced' then 6 when 'unsubscribed' then 7 else 99
        end as status_order,
        with_totals.count_recipients,
        {{ pct('with_totals.count_recipients', 'with_totals.campaign_recipients') }} as pct_of_recipients,
        with_totals.count_opened,
        with_totals.count_clicked,
        with_totals.count_reached_follow_up
    from with_totals
    inner join campaigns on with_totals.campaign_id = campaigns.campaign_id
)

select * from final
order by workspace_id, campaign_id, status_order, recipient_status
