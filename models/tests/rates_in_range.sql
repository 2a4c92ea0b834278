-- every rate and percentage is within 0 to 100 (rows = offending values)
-- (mailbox utilisation is left out on purpose: a lowered daily limit can leave sent_today above it)
select model, key_value, metric, value from (
    unpivot (
        select 'campaign_performance' as model, campaign_id as key_value,
            delivery_rate, open_rate, click_rate, reply_rate, positive_reply_rate, bounce_rate, unsubscribe_rate
        from reporting.campaign_performance
    ) on delivery_rate, open_rate, click_rate, reply_rate, positive_reply_rate, bounce_rate, unsubscribe_rate
    into name metric value value
    union all by name
    unpivot (
        select 'variant_performance' as model, campaign_id || ' ' || variant_index as key_value,
            reply_rate, compared_reply_rate, p_value * 100 as p_value_pct
        from reporting.variant_performance
    ) on reply_rate, compared_reply_rate, p_value_pct into name metric value value
    union all by name
    unpivot (
        select 'workspace_overview' as model, workspace_id as key_value,
            open_rate, reply_rate, positive_reply_rate, bounce_rate
        from reporting.workspace_overview
    ) on open_rate, reply_rate, positive_reply_rate, bounce_rate into name metric value value
    union all by name
    select 'recipient_funnel' as model, campaign_id as key_value, 'pct_of_recipients' as metric,
        pct_of_recipients as value
    from reporting.recipient_funnel
    union all by name
    select 'reply_outcomes', campaign_id, 'pct_of_replies', pct_of_replies from reporting.reply_outcomes
    union all by name
    select 'followup_steps', campaign_id, 'reply_rate', reply_rate from reporting.followup_steps
)
where value < 0 or value > 100
