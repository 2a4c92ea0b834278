{#- A key of several columns is unique: one row per duplicated key, with how many rows share it. -#}
{% test unique_combination(model, columns) %}
    select
        {{ columns | join(', ') }},
        count(*) as n_rows
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1
{% endtest %}
