{#-
    `select` of one raw table with exactly the columns sources.yml declares for it, each cast to its
    declared `data_type` (the contract between pipelines/ and models/):
    - a declared column the API never sent (so dlt never created it) reads as a typed null;
    - a raw table the sync has not created yet (e.g. `events` before any webhook spool) gives no rows,
      with a warning;
    - a value dlt could not coerce to the column's type lands in a variant column (`current_step__v_text`);
      it is folded back when that loses nothing ('42' -> 42). What cannot be folded stays null here and
      fails the data test `no_uncoerced_variants` (tests/), which names the table and column.
-#}
{% macro typed_source(table_name) %}
    {%- set relation = source('outreach', table_name) -%}
    {%- if not execute -%}
        select * from {{ relation }}
    {%- else -%}
        {%- set node = graph.sources['source.outreach.outreach.' ~ table_name] -%}
        {%- set contract = [] -%}
        {%- for name, column in node.columns.items() -%}
            {%- if not column.data_type -%}
                {{ exceptions.raise_compiler_error("sources.yml: column " ~ table_name ~ "." ~ name ~ " needs a data_type") }}
            {%- endif -%}
            {%- do contract.append((name, column.data_type)) -%}
        {%- endfor -%}
        {%- set existing = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
        {%- if existing is none -%}
            {%- do exceptions.warn("raw table " ~ relation.schema ~ "." ~ table_name ~ " does not exist yet: " ~ model.name ~ " is empty until a sync loads it") -%}
            select
            {%- for name, type in contract %}
                cast(null as {{ contract_type(type) }}) as {{ adapter.quote(name) }}{{ ',' if not loop.last }}
            {%- endfor %}
            where 1 = 0
        {%- else -%}
            {%- set columns = {} -%}
            {%- for column in adapter.get_columns_in_relation(existing) -%}
                {%- do columns.update({column.name | lower: column}) -%}
            {%- endfor %}
            select
            {%- for name, type in contract %}
                {%- set parts = [] -%}
                {%- if name in columns -%}
                    {%- if columns[name].is_string() and type != 'text' -%}
                        {%- do parts.append(lossless_cast(adapter.quote(name), type)) -%}
                    {%- else -%}
                        {%- do parts.append('cast(' ~ adapter.quote(name) ~ ' as ' ~ contract_type(type) ~ ')') -%}
                    {%- endif -%}
                {%- endif -%}
                {%- for other in columns.keys() | sort -%}
                    {%- if other.startswith(name ~ '__v_') -%}
                        {%- do parts.append(lossless_cast(adapter.quote(other), type)) -%}
                    {%- endif -%}
                {%- endfor %}
                {% if parts | length == 0 -%}
                    cast(null as {{ contract_type(type) }})
                {%- elif parts | length == 1 -%}
                    {{ parts[0] }}
                {%- else -%}
                    coalesce({{ parts | join(', ') }})
                {%- endif %} as {{ adapter.quote(name) }}{{ ',' if not loop.last }}
            {%- endfor %}
            from {{ relation }}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
