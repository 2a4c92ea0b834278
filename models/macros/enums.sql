{#- Which reply_type values count as a positive reply. The API does not list its values (models/README.md,
    "Positive replies"); unknown values count as not positive and stay visible in reply_outcomes. -#}
{% macro positive_reply_types() %}
    {{ return(['interested', 'meeting_booked', 'meeting_request', 'positive']) }}
{% endmacro %}

{% macro is_positive_reply(reply_type) -%}
    coalesce(lower({{ reply_type }}) in ('{{ positive_reply_types() | join("', '") }}'), false)
{%- endmacro %}

{#- Recipient statuses the spec lists; any other value is counted as "other" in lead_engagement and
    kept as its own row in recipient_funnel. -#}
{% macro recipient_statuses() %}
    {{ return(['pending', 'active', 'sent', 'replied', 'bounced', 'unsubscribed', 'completed']) }}
{% endmacro %}
