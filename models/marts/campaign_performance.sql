with campaigns as (
    select * from {{ ref('stg_campaigns') }}
),

workspaces as (
    select * from {{ ref('stg_workspaces') }}
),

stats as (
    select * from {{ ref('stg_campaign_stats') }}
),

-- not materialized: read more than once, the CTE would first be copied whole, every column of every row
recipients as not materialized (
    select * from {{ ref('stg_campaign_recipients') }}
),

replies as not materialized (
    select * from {{ ref('stg_replies') }}
),

daily_sends as (
    select * from {{ ref('stg_campaign_daily_sends') }}
),

events as (
    select * from {{ ref('stg_events') }}
),

history as (
    select * from {{ ref('stg_campaign_history') }}
),

recipient_facts as (
    select
        campaign_id,
        count(case when current_step > 0 then 1 end) as count_contacted_rows,
        count(case when current_step >= 2 then 1 end) as count_reached_follow_up,
        max(current_step) as max_step_reached,
        -- each of these follows a send: the earliest is an upper bound of the first send
        min(least(opened_at, clicked_at, replied_at, bounced_at)) as first_recipient_activity_at,
        avg(case when current_step > 0 then current_step end) as avg_step_reached,
        {{ median('case when replied_at >= last_sent_at then ' ~ hours_between('last_sent_at', 'replied_at') ~ ' end') }}
            as median_hours_to_reply
    from recipients
    group by campaign_id
),

replied_recipients as (
    -- the campaign's replied recipients, each with the classes of their replies: human and positive
    -- repliers are subsets of the replied recipients, so their rates never exceed reply_rate
    select
        recipients.campaign_id,
        recipients.lead_email,
        max(case when {{ is_human_reply_class('replies.reply_class') }} then 1 else 0 end) as is_human,
        max(case when replies.is_positive then 1 else 0 end) as is_positive
    from recipients
    inner join replies
        on recipients.campaign_id = replies.campaign_id
        and recipients.lead_email = replies.lead_email
    where recipients.replied_at is not null
    group by recipients.campaign_id, recipients.lead_email
),

replier_facts as (
    select
        campaign_id,
        sum(is_positive) as count_positive_replies,
        sum(is_human) as count_human_replied
    from replied_recipients
    group by campaign_id
),

reply_facts as (
    select
        campaign_id,
        count(*) as count_replies,
        count(case when reply_class = 'auto_reply' then 1 end) as auto_reply_count,
        count(case when reply_class = 'unclassified' then 1 end) as unclassified_reply_count,
        min(received_at) as first_reply_at,
        max(received_at) as last_reply_at
    from replies
    group by campaign_id
),

event_facts as (
    select campaign_id, min(created_at) as first_event_at
    from events
    group by campaign_id
),

history_facts as (
    -- the first version our syncs saw in a state that sends (valid_from is when a sync observed it)
    select campaign_id, min(valid_from_at) as first_sending_status_at
    from history
    where campaign_status in ('active', 'completed')
    group by campaign_id
),

send_facts as (
    select
        campaign_id,
        min(case when count_sent > 0 then send_date end) as first_send_date,
        max(case when count_sent > 0 then send_date end) as last_send_date
    from daily_sends
    group by campaign_id
),

totals as (
    -- counts from the stats endpoint (system of record), else the campaign list's running totals
    select
        campaigns.*,
        coalesce(stats.total_recipients, campaigns.running_total_leads, 0) as count_recipients,
        coalesce(stats.total_sent, campaigns.running_sent, 0) as count_sent,
        coalesce(
            stats.total_delivered,
            coalesce(campaigns.running_sent, 0) - coalesce(campaigns.running_bounced, 0)
        ) as count_delivered,
        coalesce(stats.total_opened, campaigns.running_opened, 0) as count_opened,
        coalesce(stats.total_clicked, campaigns.running_clicked, 0) as count_clicked,
        coalesce(stats.total_replied, campaigns.running_replied, 0) as count_replied,
        coalesce(stats.total_bounced, campaigns.running_bounced, 0) as count_bounced,
        coalesce(stats.total_unsubscribed, 0) as count_unsubscribed,
        coalesce(stats.total_pending, 0) as count_pending,
        stats.campaign_id is not null as has_api_stats
    from campaigns
    left join stats on campaigns.campaign_id = stats.campaign_id
),

timed as (
    select
        totals.*,
        coalesce(reply_facts.count_replies, 0) as count_replies,
        cast(coalesce(replier_facts.count_positive_replies, 0) as {{ dbt.type_bigint() }}) as count_positive_replies,
        cast(coalesce(replier_facts.count_human_replied, 0) as {{ dbt.type_bigint() }}) as count_human_replied,
        coalesce(reply_facts.auto_reply_count, 0) as auto_reply_count,
        coalesce(reply_facts.unclassified_reply_count, 0) as unclassified_reply_count,
        -- contacted recipients: the API's (recipients - pending) where it has stats, else the recipient rows
        case
            when totals.has_api_stats then totals.count_recipients - totals.count_pending
            else coalesce(recipient_facts.count_contacted_rows, 0)
        end as count_contacted,
        recipient_facts.count_reached_follow_up,
        recipient_facts.max_step_reached,
        recipient_facts.avg_step_reached,
        recipient_facts.median_hours_to_reply,
        send_facts.first_send_date,
        send_facts.last_send_date,
        -- the earliest send observed (models/docs/metrics.md, first_sent_at): never last_sent_at, which moves
        -- forward with every follow-up. least() skips nulls on both engines.
        least(
            {{ utc_midnight('send_facts.first_send_date') }},
            recipient_facts.first_recipient_activity_at,
            reply_facts.first_reply_at,
            event_facts.first_event_at,
            history_facts.first_sending_status_at
        ) as first_sent_at,
        -- only a send in the daily history is a send observed; the others only show it happened by then
        case
            when send_facts.first_send_date is not null
                and {{ utc_midnight('send_facts.first_send_date') }} <= coalesce(
                    least(
                        recipient_facts.first_recipient_activity_at,
                        reply_facts.first_reply_at,
                        event_facts.first_event_at,
                        history_facts.first_sending_status_at
                    ),
                    {{ utc_midnight('send_facts.first_send_date') }}
                )
                then true
            else false
        end as is_first_send_observed,
        reply_facts.first_reply_at,
        reply_facts.last_reply_at
    from totals
    left join recipient_facts on totals.campaign_id = recipient_facts.campaign_id
    left join reply_facts on totals.campaign_id = reply_facts.campaign_id
    left join replier_facts on totals.campaign_id = replier_facts.campaign_id
    left join send_facts on totals.campaign_id = send_facts.campaign_id
    left join event_facts on totals.campaign_id = event_facts.campaign_id
    left join history_facts on totals.campaign_id = history_facts.campaign_id
),

final as (
    select
        timed.campaign_id,
        timed.workspace_id,
        workspaces.workspace_name,
        timed.campaign_name,
        timed.campaign_status,
        timed.campaign_type,
        timed.count_subject_lines as count_variants,
        timed.count_subject_lines > 1 as is_ab_test,
        timed.is_follow_up_enabled,
        timed.max_follow_ups,
        timed.count_recipients,
        timed.count_sent,
        timed.count_delivered,
        timed.count_opened,
        timed.count_clicked,
        timed.count_replied,
        timed.count_positive_replies,
        timed.count_bounced,
        timed.count_unsubscribed,
        timed.count_pending,
        timed.count_replies,
        timed.count_contacted,
        timed.count_human_replied,
        timed.auto_reply_count,
        timed.unclassified_reply_count,
        -- the service's rates (GET /campaigns/{id}/stats, rates.* / 100): recipients over contacted recipients
        {{ ratio('timed.count_opened', 'timed.count_contacted', '0') }} as open_rate,
        {{ ratio('timed.count_clicked', 'timed.count_contacted', '0') }} as click_rate,
        {{ ratio('timed.count_replied', 'timed.count_contacted', '0') }} as reply_rate,
        {{ ratio('timed.count_bounced', 'timed.count_contacted', '0') }} as bounce_rate,
        {{ ratio('timed.count_unsubscribed', 'timed.count_contacted', '0') }} as unsubscribe_rate,
        {{ ratio('timed.count_contacted', 'timed.count_recipients', '0') }} as progress_rate,
        -- subsets of the replied recipients, over the same denominator
        {{ ratio('timed.count_human_replied', 'timed.count_contacted', '0') }} as human_reply_rate,
        {{ ratio('timed.count_positive_replies', 'timed.count_contacted', '0') }} as positive_reply_rate,
        -- message rates, and the per-message reply rate some other tools report
        {{ ratio('timed.count_delivered', 'timed.count_sent') }} as delivery_rate,
        {{ ratio('timed.count_replied', 'timed.count_delivered') }} as reply_rate_per_delivered_message,
        {{ ratio('timed.count_human_replied', 'timed.count_delivered') }} as human_reply_rate_per_delivered_message,
        coalesce(timed.count_reached_follow_up, 0) as count_reached_follow_up,
        coalesce(timed.max_step_reached, 0) as max_step_reached,
        {{ round_to('timed.avg_step_reached', 2) }} as avg_step_reached,
        {{ round_to('timed.median_hours_to_reply', 2) }} as median_hours_to_reply,
        timed.has_api_stats,
        timed.first_send_date,
        timed.last_send_date,
        timed.created_at,
        timed.first_sent_at,
        timed.first_reply_at,
        timed.last_reply_at,
        timed.is_first_send_observed,
        -- unknown (null), not 0, when the first send itself was not observed
        case when timed.is_first_send_observed then
            {{ round_to(hours_between('timed.first_sent_at', 'timed.first_reply_at'), 2) }}
        end as hours_to_first_reply
    from timed
    left join workspaces on timed.workspace_id = workspaces.workspace_id
)

select * from final
order by workspace_id, campaign_id
