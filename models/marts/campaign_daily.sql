-- one row per campaign and UTC day with any send, open, click, reply or bounce
with campaigns as (
    select campaign_id, workspace_id from reporting.stg_campaigns
),
daily_sends as (
    select * from reporting.stg_campaign_daily_sends
),
recipients as (
    select * from reporting.stg_campaign_recipients
),
replies as (
    select * from reporting.stg_replies
),
recipient_events as (
    select campaign_id, (opened_at at time zone 'UTC')::date as activity_date, 'opened' as event
    from recipients where opened_at is not null
    union all
    select campaign_id, (clicked_at at time zone 'UTC')::date, 'clicked'
    from recipients where clicked_at is not null
    union all
    select campaign_id, (replied_at at time zone 'UTC')::date, 'replied'
    from recipients where replied_at is not null
    union all
    select campaign_id, (bounced_at at time zone 'UTC')::date, 'bounced'
    from recipients where bounced_at is not null
),
recipient_daily as (
    select
        campaign_id,
        activity_date,
        count(*) filter (where event = 'opened') as count_opened,
        count(*) filter (where event = 'clicked') as count_clicked,
        count(*) filter (where event = 'replied') as count_replied,
        count(*) filter (where event = 'bounced') as count_bounced,
    from recipient_events
    group by all
),
reply_daily as (
    select
        campaign_id,
        (received_at at time zone 'UTC')::date as activity_date,
        count(*) as count_replies_received,
        count(*) filter (where is_positive) as count_positive_replies_received,
    from replies
    where received_at is not null
    group by all
),
send_daily as (
    select campaign_id, send_date as activity_date, sum(count_sent)::bigint as count_sent
    from daily_sends
    group by all
),
joined as (
    select
        coalesce(s.campaign_id, r.campaign_id, m.campaign_id) as campaign_id,
        coalesce(s.activity_date, r.activity_date, m.activity_date) as activity_date,
        coalesce(s.count_sent, 0) as count_sent,
        coalesce(r.count_opened, 0) as count_opened,
        coalesce(r.count_clicked, 0) as count_clicked,
        coalesce(r.count_replied, 0) as count_replied,
        coalesce(r.count_bounced, 0) as count_bounced,
        coalesce(m.count_replies_received, 0) as count_replies_received,
        coalesce(m.count_positive_replies_received, 0) as count_positive_replies_received,
    from send_daily s
    full outer join recipient_daily r using (campaign_id, activity_date)
    full outer join reply_daily m using (campaign_id, activity_date)
),
final as (
    select
        joined.campaign_id,
        campaigns.workspace_id,
        joined.activity_date,
        joined.count_sent,
        joined.count_opened,
        joined.count_clicked,
        joined.count_replied,
        joined.count_bounced,
        joined.count_replies_received,
        joined.count_positive_replies_received,
        (sum(joined.count_sent) over (
            partition by joined.campaign_id order by joined.activity_date
        ))::bigint as cumulative_sent,
    from joined
    join campaigns using (campaign_id)
)
select * from final
order by workspace_id, campaign_id, activity_date
