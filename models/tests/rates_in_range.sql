-- Every rate, percentage and p-value (as a percentage) is within 0 to 100 (rows = offending values).
-- Mailbox utilisation is left out on purpose: lowering a daily limit can leave sent_today above it; so are
-- human_reply_rate and the launch cohorts' rates, whose numerators count reply senders or recipient rows
-- over the API's contacted total (a reply forwarded to a colleague can exceed a tiny campaign's contacted);
-- the pandas tests check them.
with campaign_rates as (
    select * from {{ ref('campaign_performance') }}
),

variant_rates as (
    select * from {{ ref('variant_performance') }}
),

workspace_rates as (
    select * from {{ ref('workspace_overview') }}
),

rates as (
    {%- set checks = [
        ('campaign_rates', 'campaign_id', ['delivery_rate', 'open_rate', 'click_rate', 'reply_rate',
            'reply_rate_of_delivered', 'positive_reply_rate', 'bounce_rate', 'unsubscribe_rate']),
        ('variant_rates', 'campaign_id', ['reply_rate', 'reply_rate_of_sent', 'compared_reply_rate', 'p_value * 100']),
        ('workspace_rates', 'workspace_id', ['open_rate', 'reply_rate', 'reply_rate_of_delivered',
            'positive_reply_rate', 'bounce_rate']),
    ] %}
    {%- for relation, key, columns in checks %}
    {%- for column in columns %}
    select '{{ relation }}' as model, {{ key }} as key_value, '{{ column }}' as metric,
        cast({{ column }} as {{ type_double() }}) as value
    from {{ relation }}
    union all
    {%- endfor %}
    {%- endfor %}
    select 'recipient_funnel', campaign_id, 'pct_of_recipients', pct_of_recipients
    from {{ ref('recipient_funnel') }}
    union all
    select 'reply_outcomes', campaign_id, 'pct_of_replies', pct_of_replies
    from {{ ref('reply_outcomes') }}
    union all
    select 'followup_steps', campaign_id, 'reply_rate', reply_rate
    from {{ ref('followup_steps') }}
    union all
    select 'followup_steps', campaign_id, 'pct_of_recipients', pct_of_recipients
    from {{ ref('followup_steps') }}
    {%- for column in ['open_rate', 'reply_rate', 'human_reply_rate'] %}
    union all
    select 'send_time_performance', workspace_id, '{{ column }}', {{ column }}
    from {{ ref('send_time_performance') }}
    {%- endfor %}
)

select * from rates
where value < 0 or value > 100
