{#-
    An accepted_values-style test for reply types against the reply-class map (var reply_classes and
    extra_reply_classes, macros/enums.sql): one row per reply_type the map does not know, with how many
    rows carry it, e.g. `value_field=out_of_office_v2 n_records=12`. Configure it as a warning: the
    service may add values, and those replies are counted as `unclassified` (never silently "not
    positive") until the map names them. A missing reply_type (null, blank or `unclassified`) is not
    reported: the service has not classified that reply yet.
-#}
{% test known_reply_type(model, column_name) %}
    select
        {{ column_name }} as value_field,
        count(*) as n_records
    from {{ model }}
    where {{ column_name }} is not null
        and lower(trim({{ column_name }})) not in ('', 'unclassified')
        and {{ reply_class(column_name) }} = 'unclassified'
    group by {{ column_name }}
{% endtest %}
