with mailboxes as (
    select * from {{ ref('stg_email_accounts') }}
),

history as (
    select * from {{ ref('stg_email_account_history') }}
),

replies as (
    select * from {{ ref('stg_replies') }}
),

trend as (
    select
        email_account_id,
        count(*) as count_versions,
        min(valid_from_at) as first_observed_at,
        {{ arg_min('reputation_score', 'valid_from_at') }} as first_reputation_score,
        min(reputation_score) as min_reputation_score,
        max(reputation_score) as max_reputation_score,
        {{ arg_min('warmup_health_score', 'valid_from_at') }} as first_warmup_health_score,
        max(sent_today) as max_sent_today_observed
    from history
    group by email_account_id
),

reply_facts as (
    select
        email_account_id,
        count(*) as count_replies,
        count(case when is_positive then 1 end) as count_positive_replies,
        count(distinct campaign_id) as count_campaigns_replied,
        max(received_at) as last_reply_at
    from replies
    group by email_account_id
),

final as (
    select
        mailboxes.email_account_id,
        mailboxes.workspace_id,
        mailboxes.mailbox_email,
        mailboxes.display_name,
        mailboxes.provider,
        mailboxes.is_active,
        mailboxes.is_warmup_enabled,
        mailboxes.daily_send_limit,
        mailboxes.sent_today,
        {{ pct('mailboxes.sent_today', 'mailboxes.daily_send_limit') }} as utilisation_pct,
        trend.max_sent_today_observed,
        mailboxes.reputation_score,
        trend.first_reputation_score,
        {{ round_to('mailboxes.reputation_score - trend.first_reputation_score', 2) }} as reputation_change,
        trend.min_reputation_score,
        trend.max_reputation_score,
        case
            when mailboxes.reputation_score > trend.first_reputation_score then 'rising'
            when mailboxes.reputation_score < trend.first_reputation_score then 'falling'
            else 'flat'
        end as reputation_trend,
        mailboxes.warmup_health_score,
        trend.first_warmup_health_score,
        {{ round_to('mailboxes.warmup_health_score - trend.first_warmup_health_score', 2) }} as warmup_health_change,
        case
            when mailboxes.warmup_health_score > trend.first_warmup_health_score then 'rising'
            when mailboxes.warmup_health_score < trend.first_warmup_health_score then 'falling'
            else 'flat'
        end as warmup_trend,
        trend.count_versions,
        coalesce(reply_facts.count_replies, 0) as count_replies,
        coalesce(reply_facts.count_positive_replies, 0) as count_positive_replies,
        coalesce(reply_facts.count_campaigns_replied, 0) as count_campaigns_replied,
        mailboxes.created_at,
        trend.first_observed_at,
        mailboxes.valid_from_at as last_changed_at,
        reply_facts.last_reply_at
    from mailboxes
    inner join trend on mailboxes.email_account_id = trend.email_account_id
    left join reply_facts on mailboxes.email_account_id = reply_facts.email_account_id
)

select * from final
order by workspace_id, mailbox_email
