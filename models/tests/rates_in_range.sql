-- Every rate is a fraction from 0 to 1, and so is every p-value and interval bound (rows = offending
-- values). Percentages (`pct_of_*`, `*_pct`) are 0 to 100 and are checked too; mailbox utilisation is
-- left out on purpose: lowering a daily limit can leave sent_today above it.
{%- set fractions = [
    ('campaign_performance', 'campaign_id', ['open_rate', 'click_rate', 'reply_rate', 'bounce_rate', 'unsubscribe_rate',
        'progress_rate', 'human_reply_rate', 'positive_reply_rate', 'delivery_rate', 'reply_rate_per_delivered_message',
        'human_reply_rate_per_delivered_message']),
    ('workspace_overview', 'workspace_id', ['open_rate', 'click_rate', 'reply_rate', 'human_reply_rate',
        'positive_reply_rate', 'bounce_rate', 'unsubscribe_rate', 'reply_rate_per_delivered_message']),
    ('variant_performance', 'campaign_id', ['reply_rate', 'reply_rate_ci_low', 'reply_rate_ci_high',
        'reply_rate_per_sent_message', 'p_value', 'adjusted_p_value']),
    ('followup_steps', 'campaign_id', ['reply_rate']),
    ('send_time_performance', 'workspace_id', ['open_rate', 'reply_rate', 'human_reply_rate']),
    ('launch_cohorts', 'launch_week', ['reply_rate_7d', 'positive_reply_rate_7d', 'reply_rate_14d',
        'positive_reply_rate_14d', 'reply_rate_28d', 'positive_reply_rate_28d']),
] %}
{%- set percentages = [
    ('recipient_funnel', 'campaign_id', ['pct_of_recipients']),
    ('followup_steps', 'campaign_id', ['pct_of_recipients']),
    ('reply_outcomes', 'campaign_id', ['pct_of_replies']),
] %}
with rates as (
    {%- for checks, top in [(fractions, 1), (percentages, 100)] %}
    {%- set outer = loop %}
    {%- for relation, key, columns in checks %}
    {%- set inner = loop %}
    {%- for column in columns %}
    select '{{ relation }}' as model, cast({{ key }} as {{ dbt.type_string() }}) as key_value,
        '{{ column }}' as metric, cast({{ column }} as {{ type_double() }}) as value, {{ top }} as top_value
    from {{ ref(relation) }}
    {{ 'union all' if not (outer.last and inner.last and loop.last) }}
    {%- endfor %}
    {%- endfor %}
    {%- endfor %}
)

select * from rates
where value < 0 or value > top_value
