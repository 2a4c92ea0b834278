{#-
    The all-or-nothing build (macros/atomic_build.sql) of an incremental model: its `<name>__next` must start
    as the published table, which the run changes and the swap publishes with the rest.

    - PostgreSQL: a copy. Other sessions read the published table while the build runs.
    - DuckDB: the published table itself, renamed to `__next`, not a copy of millions of rows: no other process
      can open the file while `outreach models` writes it. An undo record in `reporting_inputs` says how to
      put the table back: `incremental_touched_<name>`, the leads the run replaced, and `incremental_undo_<name>`,
      their rows before. The rename and the empty record are one transaction (the on-run-start hook's), the
      model's pre-hook fills the record in the model's own transaction, and the swap drops it. So the record
      exists exactly while the table is aside: a failed run restores the rows and renames the table back, and
      the next run's start does the same after a run that was killed.
-#}

{% macro keeps_undo_record() %}
    {{ return(target.type == 'duckdb' and var('atomic_build', false) and not flags.FULL_REFRESH) }}
{% endmacro %}

{% macro undo_relation(model_name) %}{{ return(incremental_state_relation('undo_' ~ model_name)) }}{% endmacro %}
{% macro touched_leads_relation(model_name) %}{{ return(incremental_state_relation('touched_' ~ model_name)) }}{% endmacro %}

{#- The tables of reporting_inputs now (a query: dbt's relation cache does not see what hooks create). -#}
{% macro reporting_inputs_tables() %}
    {%- set rows = run_query("select table_name from information_schema.tables where table_catalog = '"
        ~ target.database ~ "' and table_schema = 'reporting_inputs'") -%}
    {{ return(rows.columns[0].values() | map('lower') | list) }}
{% endmacro %}

{#- Put the rows the run replaced back into `relation` (the model's `__next`) and rename it to the model's name. -#}
{% macro restore_sql(node, relation) %}
    {%- set touched = touched_leads_relation(node.name) -%}
    {{ return([
        'delete from ' ~ relation ~ ' as target using ' ~ touched ~ ' as touched where ' ~ touched_lead_match('touched', 'target'),
        'insert into ' ~ relation ~ ' select * from ' ~ undo_relation(node.name),
        'alter table ' ~ relation ~ ' rename to ' ~ adapter.quote(node.name),
    ]) }}
{% endmacro %}

{% macro drop_undo_sql(node) %}
    {{ return(['drop table if exists ' ~ undo_relation(node.name), 'drop table if exists ' ~ touched_leads_relation(node.name)]) }}
{% endmacro %}

{#- The on-run-start hook's statements for one incremental model (`inputs_tables`: reporting_inputs_tables()
    on DuckDB, read once for every model). -#}
{% macro start_incremental_relation(node, inputs_tables) %}
    {%- set published = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.name) -%}
    {%- set next = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
    {%- set statements = [] -%}
    {%- if undo_relation(node.name).identifier in inputs_tables -%}
        {%- if published is none and next is not none -%}  {#- a run killed while the table was aside -#}
            {%- do statements.extend(restore_sql(node, next)) -%}
            {%- set published = next.incorporate(path={'identifier': node.name}) -%}
            {%- do adapter.cache_renamed(next, published) -%}
            {%- set next = none -%}
        {%- endif -%}
        {%- do statements.extend(drop_undo_sql(node)) -%}
    {%- endif -%}
    {%- if flags.FULL_REFRESH or node.unique_id not in selected_resources
        or published is none or not published.is_table -%}
        {{ return(statements) }}
    {%- endif -%}
    {%- set next_table = published.incorporate(path={'identifier': node.alias}) -%}
    {%- if next is not none -%}
        {%- do statements.append('drop table if exists ' ~ next) -%}
        {%- do adapter.cache_dropped(next) -%}
    {%- endif -%}
    {%- if keeps_undo_record() -%}
        {%- do statements.append('create table ' ~ undo_relation(node.name) ~ ' as select * from ' ~ published ~ ' where 1 = 0') -%}
        {%- do statements.append('create table ' ~ touched_leads_relation(node.name) ~ ' as select '
            ~ lead_key_columns() ~ ' from ' ~ published ~ ' where 1 = 0') -%}
        {%- do statements.append('alter table ' ~ published ~ ' rename to ' ~ adapter.quote(node.alias)) -%}
        {%- do adapter.cache_renamed(published, next_table) -%}
    {%- else -%}
        {%- do statements.append('create table ' ~ next_table ~ ' as select * from ' ~ published) -%}
        {#- dbt listed the schema's relations before this hook: tell its cache of the copy, which these
            statements create right after rendering, before any model runs -#}
        {%- do adapter.cache_added(next_table) -%}
    {%- endif -%}
    {{ return(statements) }}
{% endmacro %}

{#- After a failed build: each incremental model that is aside goes back (its undo record is dropped after,
    with the rest of the run's state); the names of the `__next` relations restored, and the statements. -#}
{% macro restore_incremental_relations(published_relations) %}
    {%- set result = {'statements': [], 'restored': []} -%}
    {%- if not keeps_undo_record() -%}{{ return(result) }}{%- endif -%}
    {%- set names = [] -%}
    {%- for relation in published_relations -%}{%- do names.append(relation.identifier | lower) -%}{%- endfor -%}
    {%- set records = reporting_inputs_tables() -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental'
            and undo_relation(node.name).identifier in records
            and node.name | lower not in names and node.alias | lower in names -%}
            {%- do result.statements.extend(restore_sql(node, api.Relation.create(database=node.database,
                schema=node.schema, identifier=node.alias, type='table'))) -%}
            {%- do result.restored.append(node.alias | lower) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(result) }}
{% endmacro %}
