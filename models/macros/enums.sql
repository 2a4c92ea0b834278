{#- Reply classes: the var `reply_classes` (dbt_project.yml) maps each reply_type the service sends to one
    of REPLY_CLASSES; `extra_reply_classes` (default empty) adds to or overrides it, so
    `--vars '{extra_reply_classes: {out_of_office_v2: auto_reply}}'` maps one new value without restating
    the map. Matching is case-insensitive and ignores surrounding blanks. A reply_type the map does not
    know (and a missing one) is `unclassified`: never silently "not positive"; the test
    `known_reply_type` warns naming the value (models/README.md, "Reply classes"). -#}
{% macro reply_class_names() %}
    {{ return(['positive', 'neutral', 'negative', 'auto_reply', 'bounce']) }}
{% endmacro %}

{#- Classes that are not a person answering: left out of human replies. -#}
{% macro machine_reply_classes() %}
    {{ return(['auto_reply', 'bounce']) }}
{% endmacro %}

{#- The effective map {lower-cased reply_type: class}; a compile error names a value that is not a class. -#}
{% macro reply_class_map() %}
    {%- set base = var('reply_classes', none) -%}
    {%- if base is none or base is not mapping -%}
        {{ exceptions.raise_compiler_error("var reply_classes must map each reply_type to a class (see models/dbt_project.yml)") }}
    {%- endif -%}
    {%- set extra = var('extra_reply_classes', {}) or {} -%}
    {%- if extra is not mapping -%}
        {{ exceptions.raise_compiler_error("var extra_reply_classes must map reply_type to class, e.g. {out_of_office_v2: auto_reply}") }}
    {%- endif -%}
    {%- set merged = {} -%}
    {%- for var_name, source_map in [('reply_classes', base), ('extra_reply_classes', extra)] -%}
        {%- for reply_type, reply_class in source_map.items() -%}
            {%- if reply_class not in reply_class_names() -%}
                {{ exceptions.raise_compiler_error(var_name ~ ": '" ~ reply_type ~ "' maps to '" ~ reply_class
                    ~ "', which is not one of " ~ reply_class_names() | join(', ')) }}
            {%- endif -%}
            {%- do merged.update({(reply_type | string | trim | lower): reply_class}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(merged) }}
{% endmacro %}

{#- The class of a reply_type expression: one of reply_class_names(), else 'unclassified'. -#}
{% macro reply_class(reply_type) -%}
    {%- set mapping = reply_class_map() -%}
    {%- if not mapping -%}
        {#- an empty map classes every reply as unclassified; a `case` without a `when` is no SQL -#}
        cast('unclassified' as {{ dbt.type_string() }})
    {%- else -%}
    case lower(trim({{ reply_type }}))
    {%- for value, cls in mapping | dictsort %}
        when {{ sql_string(value) }} then '{{ cls }}'
    {%- endfor %}
        else 'unclassified'
    end
    {%- endif -%}
{%- endmacro %}

{% macro is_positive_reply(reply_type) -%}
    ({{ reply_class(reply_type) }} = 'positive')
{%- endmacro %}

{#- A reply of this class counts as a human reply (not auto_reply or bounce; unclassified counts). -#}
{% macro is_human_reply_class(reply_class_column) -%}
    ({{ reply_class_column }} not in ('{{ machine_reply_classes() | join("', '") }}'))
{%- endmacro %}

{#- Recipient statuses the spec lists; any other value is counted as "other" in lead_engagement and
    kept as its own row in recipient_funnel. -#}
{% macro recipient_statuses() %}
    {{ return(['pending', 'active', 'sent', 'replied', 'bounced', 'unsubscribed', 'completed']) }}
{% endmacro %}
