{#-
    A model's column rules, checked by one test: each dbt test is a node with dbt's own fixed cost on
    every build (on a small warehouse, more than its query), so a model has one test per severity instead of
    one per column and rule. One row per broken rule, with an offending value and how
    many rows break it, e.g. `rule=unique column_name=campaign_id value_field=c-17 n_records=2`:
    - not_null: [column, ...]: every listed column holds a value in every row (one pass counts them all);
    - unique: [key, ...]: a key (a column, a list of columns, or {columns: [...], where: <condition>} for
      the rows where it must hold) identifies one row; n_records counts the rows whose key another row shares;
    - accepted_values: {column: [value, ...]}: a value is null or one of these; one row per other value;
    - relationships: [{column: ..., to: ref('...'), field: ...}]: a value is null or present in `to`;
    - incremental_scope: which rows an incremental build can have changed (macros/incremental_scope.sql);
      the rules then read those rows only, and `unique` every row sharing a key with one of them.
-#}
{% test model_rules(model, not_null=[], unique=[], accepted_values={}, relationships=[], incremental_scope={}) %}
    {%- set text = dbt.type_string() -%}
    {%- set scope = incremental_test_scope(incremental_scope) -%}
    {%- set rows = model if scope is none else '(select * from ' ~ model ~ ' where ' ~ scope ~ ')' -%}
    {%- set keys = [] -%}
    {%- for key in unique -%}
        {%- do keys.append(key if key is mapping else {'columns': [key] if key is string else key}) -%}
    {%- endfor -%}
    {%- if not_null %}
    with not_null_counts as (
        select
            count(*) as n_rows
            {%- for column in not_null %},
            count({{ column }}) as n_{{ loop.index }}
            {%- endfor %}
        from {{ rows }} as tested
    )
    {%- endif %}

    {#- every check ends with `union all`: the last select, which returns nothing, sets the types -#}
    {%- for column in not_null %}
    select 'not_null' as rule, '{{ column }}' as column_name, cast(null as {{ text }}) as value_field,
        n_rows - n_{{ loop.index }} as n_records
    from not_null_counts
    where n_{{ loop.index }} < n_rows
    union all
    {%- endfor %}

    {%- for key in keys %}
    select 'unique' as rule, '{{ key.columns | join(", ") }}' as column_name, min(value_field) as value_field,
        cast(sum(n) as {{ dbt.type_bigint() }}) as n_records
    from (
        select cast({{ key.columns[0] }} as {{ text }}) as value_field, count(*) as n
        from {{ model }} as tested
        where {{ key.where or '1 = 1' }}
        {#- scoped: the keys of the changed rows; a key with a null, which `in` never matches, everywhere. A key
            over every column the scope reads: a row sharing it with a changed row is in the scope itself. #}
        {%- if scope is not none %}
            {%- set covered = incremental_scope_columns(incremental_scope) | reject('in', key.columns) | list | length == 0 %}
            and ({{ scope if covered else '(' ~ key.columns | join(', ') ~ ') in (select ' ~ key.columns | join(', ')
                    ~ ' from ' ~ rows ~ ' as changed)' }}
                {%- for column in key.columns %} or {{ column }} is null{% endfor %})
        {%- endif %}
        group by {{ key.columns | join(', ') }}
        having count(*) > 1
    ) as duplicated
    having count(*) > 0
    union all
    {%- endfor %}

    {%- for column, values in accepted_values.items() %}
    select 'accepted_values' as rule, '{{ column }}' as column_name, cast({{ column }} as {{ text }}) as value_field,
        count(*) as n_records
    from {{ rows }} as tested
    where {{ column }} is not null
        and cast({{ column }} as {{ text }}) not in (
            {%- for value in values -%}
            '{{ (value | string).replace("'", "''") }}'{{ ', ' if not loop.last }}
            {%- endfor -%}
        )
    group by {{ column }}
    union all
    {%- endfor %}

    {%- for link in relationships %}
    select 'relationships' as rule, '{{ link.column }}' as column_name,
        min(cast(child.{{ link.column }} as {{ text }})) as value_field, count(*) as n_records
    from {{ rows }} as child
    left join {{ link.to }} as parent on child.{{ link.column }} = parent.{{ link.field }}
    where child.{{ link.column }} is not null and parent.{{ link.field }} is null
    having count(*) > 0
    union all
    {%- endfor %}

    select
        cast(null as {{ text }}) as rule,
        cast(null as {{ text }}) as column_name,
        cast(null as {{ text }}) as value_field,
        cast(null as {{ dbt.type_bigint() }}) as n_records
    where 1 = 0
{% endtest %}
