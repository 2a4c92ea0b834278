{#- A time zone the engine does not know (send_time_performance then takes UTC): one row per such value,
    with how many rows carry it, e.g. `value_field=Mars/Olympus n_records=2`. Use it as a warning. -#}
{% test known_timezone(model, column_name) %}
    select
        {{ column_name }} as value_field,
        count(*) as n_records
    from {{ model }}
    where {{ column_name }} is not null
        and {{ column_name }} not in {{ timezone_names() }}
    group by {{ column_name }}
{% endtest %}
