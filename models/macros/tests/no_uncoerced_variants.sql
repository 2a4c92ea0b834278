{#-
    Fails (one row per raw row) when dlt put a value it could not coerce into a variant column such as
    `current_step__v_text` and the value cannot be folded back into the column's type without loss.
    Each row names the raw table, the variant column and the value, so the type drift never reaches a
    mart as a quiet null. A value that folds back losslessly ('42' for an integer) passes: the staging
    view uses it (macros/typed_source.sql).
-#}
{% test no_uncoerced_variants(model) %}
    {%- set checks = [] -%}
    {%- if execute -%}
        {%- set columns = {} -%}
        {%- for column in adapter.get_columns_in_relation(model) -%}
            {%- do columns.update({column.name | lower: column}) -%}
        {%- endfor -%}
        {%- for name in columns.keys() | sort -%}
            {%- if '__v_' in name -%}
                {%- set base = name.split('__v_')[0] -%}
                {%- do checks.append((name, contract_of(columns.get(base)))) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if checks | length == 0 %}
    select
        cast(null as {{ dbt.type_string() }}) as raw_table,
        cast(null as {{ dbt.type_string() }}) as variant_column,
        cast(null as {{ dbt.type_string() }}) as raw_value
    where 1 = 0
    {%- else -%}
    {%- for variant, type in checks %}
    select
        '{{ model.identifier }}' as raw_table,
        '{{ variant }}' as variant_column,
        cast({{ adapter.quote(variant) }} as {{ dbt.type_string() }}) as raw_value
    from {{ model }}
    where {{ adapter.quote(variant) }} is not null
        and {{ lossless_cast(adapter.quote(variant), type) }} is null
    {{ 'union all' if not loop.last }}
    {%- endfor %}
    {%- endif %}
{% endtest %}

{#- The contract type name for a raw column's actual type (text when unknown). -#}
{% macro contract_of(column) %}
    {%- if column is none -%}{{ return('text') }}{%- endif -%}
    {%- set dtype = column.dtype | lower -%}
    {%- if column.is_integer() -%}{{ return('bigint') }}
    {%- elif column.is_float() or column.is_numeric() -%}{{ return('double') }}
    {%- elif 'bool' in dtype -%}{{ return('boolean') }}
    {%- elif 'timestamp' in dtype -%}{{ return('timestamptz') }}
    {%- elif dtype == 'date' -%}{{ return('date') }}
    {%- else -%}{{ return('text') }}
    {%- endif -%}
{% endmacro %}
