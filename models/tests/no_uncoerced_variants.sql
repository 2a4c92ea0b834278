{#-
    Fails (one row per raw value) when dlt put a value it could not coerce into a variant column such as
    `current_step__v_text` and the value cannot be folded back into the column's type without loss.
    Each row names the raw table, the variant column and the value, so the type drift never reaches a
    mart as a quiet null. A value that folds back losslessly ('42' for an integer) passes: the staging
    view uses it (macros/typed_source.sql).

    One test over every table of the `outreach` source, with one look-up of the raw schema's columns: a
    test per table cost a dbt node and a catalog query each in every build, and found nothing more.
    A raw table the sync has not created yet has no columns here, so nothing to check.
-#}
{%- set checks = [] -%}
{%- if execute -%}
    {%- set tables = {} -%}
    {%- for node in graph.sources.values() if node.source_name == 'outreach' -%}
        {%- do tables.update({node.identifier | lower: node}) -%}
    {%- endfor -%}
    {%- set any_node = tables.values() | first -%}
    {%- set found = run_query(
        "select lower(table_name), lower(column_name), data_type, character_maximum_length, numeric_precision, "
        ~ "numeric_scale from information_schema.columns where lower(table_schema) = '" ~ any_node.schema | lower
        ~ "'" ~ (" and lower(table_catalog) = '" ~ any_node.database | lower ~ "'" if any_node.database else '')
        ~ " order by 1, 2"
    ) -%}
    {%- set columns = {} -%}
    {%- for row in found.rows if row[0] in tables -%}
        {%- do columns.setdefault(row[0], {}).update({row[1]: api.Column(row[1], row[2], row[3], row[4], row[5])}) -%}
    {%- endfor -%}
    {%- for table, by_name in columns | dictsort -%}
        {%- set node = tables[table] -%}
        {%- set relation = api.Relation.create(database=node.database, schema=node.schema, identifier=node.identifier) -%}
        {%- for name in by_name.keys() | sort if '__v_' in name -%}
            {%- do checks.append((relation, table, name, contract_of(by_name.get(name.split('__v_')[0])))) -%}
        {%- endfor -%}
    {%- endfor -%}
{%- endif -%}
{%- if checks | length == 0 %}
select
    cast(null as {{ dbt.type_string() }}) as raw_table,
    cast(null as {{ dbt.type_string() }}) as variant_column,
    cast(null as {{ dbt.type_string() }}) as raw_value
where 1 = 0
{%- else -%}
{%- for relation, table, variant, type in checks %}
select
    '{{ table }}' as raw_table,
    '{{ variant }}' as variant_column,
    cast({{ adapter.quote(variant) }} as {{ dbt.type_string() }}) as raw_value
from {{ relation }}
where {{ adapter.quote(variant) }} is not null
    and {{ lossless_cast(adapter.quote(variant), type) }} is null
{{ 'union all' if not loop.last }}
{%- endfor %}
{%- endif %}
