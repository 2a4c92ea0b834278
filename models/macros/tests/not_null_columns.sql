{#-
    Every listed column holds a value in every row: one row per column that has nulls, with how many,
    e.g. `column_name=reply_id n_null=3`. One test per model, not one per column: each dbt test is a node
    with dbt's own fixed cost on every build, and one pass over the model counts all its columns.
-#}
{% test not_null_columns(model, columns) %}
    with counts as (
        select
            count(*) as n_rows
            {%- for column in columns %},
            count({{ column }}) as n_{{ loop.index }}
            {%- endfor %}
        from {{ model }}
    )
    {%- for column in columns %}
    select '{{ column }}' as column_name, n_rows - n_{{ loop.index }} as n_null from counts where n_{{ loop.index }} < n_rows
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
{% endtest %}
