{{ config(materialized='table') }}

-- The reply-class map (var reply_classes plus extra_reply_classes, macros/enums.sql) as a table, so code
-- outside dbt classes replies the way the models do: the alert positive_reply_waiting joins webhook events
-- to it the moment they land, before any build has seen them.
{%- set mapping = reply_class_map() %}
{%- for value, cls in mapping | dictsort %}
select
    cast({{ sql_string(value) }} as {{ dbt.type_string() }}) as reply_type,
    cast('{{ cls }}' as {{ dbt.type_string() }}) as reply_class
{%- if not loop.last %}
union all
{%- endif %}
{%- endfor %}
{%- if not mapping %}
select
    cast(null as {{ dbt.type_string() }}) as reply_type,
    cast(null as {{ dbt.type_string() }}) as reply_class
where 1 = 0
{%- endif %}
