with campaigns as (
    select campaign_id, workspace_id from {{ ref('stg_campaigns') }}
),

replies as (
    select * from {{ ref('stg_replies') }}
),

by_type as (
    select
        campaign_id,
        reply_type,
        -- the class is a function of reply_type (one per row here)
        min(reply_class) as reply_class,
        count(*) as count_replies,
        count(case when not is_read then 1 end) as count_unread,
        count(distinct lead_email) as count_leads,
        min(received_at) as first_received_at,
        max(received_at) as last_received_at
    from replies
    group by campaign_id, reply_type
),

with_totals as (
    select
        by_type.*,
        sum(count_replies) over (partition by campaign_id) as campaign_replies
    from by_type
),

final as (
    select
        with_totals.campaign_id,
        campaigns.workspace_id,
        with_totals.reply_type,
        with_totals.reply_class,
        with_totals.reply_class = 'positive' as is_positive,
        with_totals.count_replies,
        {{ pct('with_totals.count_replies', 'with_totals.campaign_replies') }} as pct_of_replies,
        with_totals.count_unread,
        with_totals.count_leads,
        with_totals.first_received_at,
        with_totals.last_received_at
    from with_totals
    inner join campaigns on with_totals.campaign_id = campaigns.campaign_id
)

select * from final
order by workspace_id, campaign_id, reply_type
