{#-
    All-or-nothing builds. With the var `atomic_build` (set by `outreach models`), every model is built
    as `<name>__next` beside the published `<name>`, and tests read the `__next` relations. At the end
    of the run, `outreach_finish_build` swaps them in (drop the old, rename the new, in ONE transaction)
    only if every model and test passed; otherwise it drops the `__next` relations and the published
    ones stay exactly as they were. Renames stay inside the schema: DuckDB cannot move a table between
    schemas or rename a schema. Staging views read sources only, never another model, so a renamed
    view never points at a `__next` name.
-#}

{% macro generate_alias_name(custom_alias_name=none, node=none) -%}
    {%- set name = custom_alias_name | trim if custom_alias_name else node.name -%}
    {%- if node.resource_type == 'model' and var('atomic_build', false) -%}
        {{ return(name ~ next_suffix()) }}
    {%- endif -%}
    {{ return(name) }}
{%- endmacro %}

{% macro next_suffix() %}{{ return('__next') }}{% endmacro %}

{#- The on-run-end hook: show sample rows of failing and warning tests, then swap in or discard. -#}
{% macro outreach_finish_build(results) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {#- only a run that built or tested something swaps: `dbt source freshness` (run before every build,
        models/freshness.py) runs the project's hooks too, with source results only -#}
    {%- set built_or_tested = [] -%}
    {%- for result in results -%}
        {%- if result.node.resource_type in ['model', 'test'] -%}{%- do built_or_tested.append(result) -%}{%- endif -%}
    {%- endfor -%}
    {%- if not built_or_tested -%}{{ return('') }}{%- endif -%}
    {%- do describe_test_problems(results) -%}
    {%- set failed = [] -%}
    {%- for result in results -%}
        {%- if result.status in ['error', 'fail', 'runtime error', 'skipped', 'partial success'] -%}
            {%- do failed.append(result.node.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not var('atomic_build', false) -%}
        {#- a plain `dbt build`: the incremental snapshot (macros/incremental.sql) is kept only after a good one -#}
        {%- set statements = discard_incremental_state() if failed else publish_incremental_state() -%}
        {{ return((statements | join(';\n') ~ ';') if statements else '') }}
    {%- endif -%}
    {%- if failed -%}
        {{ return(discard_next_relations()) }}
    {%- endif -%}
    {{ return(swap_in_next_relations(results)) }}
{% endmacro %}

{#- One line per failing or warning test with up to 3 offending rows, e.g. the unknown value an
    accepted_values warning found. -#}
{% macro describe_test_problems(results) %}
    {%- for result in results -%}
        {%- if result.node.resource_type == 'test' and result.status in ['fail', 'warn'] and result.node.compiled_code -%}
            {%- set rows = run_query('select * from (' ~ result.node.compiled_code ~ ') as offending limit 3') -%}
            {%- set shown = [] -%}
            {%- for row in rows.rows -%}
                {%- set cells = [] -%}
                {%- for column in rows.column_names -%}
                    {%- do cells.append(column ~ '=' ~ row[column]) -%}
                {%- endfor -%}
                {%- do shown.append(cells | join(' ')) -%}
            {%- endfor -%}
            {%- do log('outreach: ' ~ result.status ~ ' ' ~ result.node.name ~ ': ' ~ shown | join('; '), info=true) -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#- The relations in the target schema, listed outside any transaction (run_query does not begin one),
    so the swap's own `begin` starts the only transaction. -#}
{% macro _published_relations() %}
    {%- set rows = run_query(adapter.dispatch('list_target_relations_sql', 'outreach')()) -%}
    {%- set relations = [] -%}
    {%- for row in rows.rows -%}
        {%- do relations.append(api.Relation.create(
            database=target.database, schema=target.schema, identifier=row[0],
            type='view' if row[1] == 'VIEW' else 'table')) -%}
    {%- endfor -%}
    {{ return(relations) }}
{% endmacro %}

{% macro default__list_target_relations_sql() %}
    {{ return("select table_name, table_type from information_schema.tables where table_schema = '"
        ~ target.schema ~ "' and table_catalog = '" ~ target.database ~ "'") }}
{% endmacro %}
{% macro duckdb__list_target_relations_sql() %}
    {{ return("select table_name, table_type from system.information_schema.tables where table_schema = '"
        ~ target.schema ~ "' and table_catalog = '" ~ target.database ~ "'") }}
{% endmacro %}

{#- One transaction: an incremental model's table that was renamed aside goes back as it was
    (macros/incremental_atomic.sql), every other `__next` relation is dropped. -#}
{% macro discard_next_relations() %}
    {%- set published = _published_relations() -%}
    {%- set restoring = restore_incremental_relations(published) -%}
    {%- set statements = ['begin'] + restoring.statements + discard_incremental_state() -%}
    {%- for relation in published -%}
        {%- if relation.identifier.endswith(next_suffix()) and relation.identifier | lower not in restoring.restored -%}
            {%- do statements.append(drop_relation_sql(relation)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do statements.append('commit') -%}
    {%- do log('outreach: build failed; the published ' ~ target.schema ~ ' relations are unchanged', info=true) -%}
    {{ return(statements | join(';\n') ~ ';') }}
{% endmacro %}

{% macro swap_in_next_relations(results) %}
    {%- set existing = {} -%}
    {%- for relation in _published_relations() -%}
        {%- do existing.update({relation.identifier | lower: relation}) -%}
    {%- endfor -%}
    {%- set built = {} -%}
    {%- for result in results -%}
        {%- set node = result.node -%}
        {%- if node.resource_type == 'model' and node.config.materialized in ['table', 'view', 'incremental'] and node.alias.endswith(next_suffix()) -%}
            {%- do built.update({node.alias[:-(next_suffix() | length)] | lower: node}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set model_names = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' -%}{%- do model_names.append(node.name | lower) -%}{%- endif -%}
    {%- endfor -%}
    {%- set replaced = [] -%}
    {%- for name in built.keys() | sort -%}
        {%- if name in existing -%}{%- do replaced.append(existing[name]) -%}{%- endif -%}
    {%- endfor -%}
    {%- set own_names = built.keys() | list + built.values() | map(attribute='alias') | map('lower') | list -%}
    {#- PostgreSQL: the grants on what the swap drops, and the views that read it, are made again after it
        (macros/swap_additions.sql) -#}
    {%- set statements = ['begin'] + save_additions_sql(replaced, own_names) -%}
    {%- for name, node in built.items() | sort -%}
        {%- if name in existing -%}{%- do statements.append(drop_relation_sql(existing[name])) -%}{%- endif -%}
        {%- set next_relation = existing.get(node.alias | lower) -%}
        {%- if next_relation is none -%}
            {{ exceptions.raise_compiler_error("model " ~ name ~ " passed but " ~ node.alias ~ " is missing from " ~ target.schema) }}
        {%- endif -%}
        {%- do statements.append('alter ' ~ next_relation.type ~ ' ' ~ next_relation ~ ' rename to ' ~ adapter.quote(name)) -%}
    {%- endfor -%}
    {#- a relation an earlier build made that no model builds any more (a removed model) goes too, so the BI
        file never shows dead tables; one no build made stays: an analyst's own table or view, the alert
        incidents (alerts/store.py) -#}
    {%- set made_before = _made_by_builds() -%}
    {%- set made = built.keys() | list -%}
    {%- set removed = [] -%}
    {%- for name, relation in existing.items() | sort -%}
        {%- if name in made_before and name not in built and not name.endswith(next_suffix()) -%}
            {%- if name in model_names -%}
                {%- do made.append(name) -%}
            {%- else -%}
                {%- do removed.append(relation) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {#- one that a view of someone else's reads stays (dropped with `cascade`, the view went too), and stays in the
        record: a later build drops it once nothing reads it -#}
    {%- set read_by = views_reading(removed) -%}
    {%- for relation in removed -%}
        {%- set name = relation.identifier | lower -%}
        {%- if name in read_by -%}
            {%- do made.append(name) -%}
            {%- do exceptions.warn(target.schema ~ '.' ~ name ~ ' is no longer built by any model, and is kept: '
                ~ read_by[name] | join(', ') ~ ' read(s) it; drop or change that, and the next build drops it') -%}
        {%- else -%}
            {%- do statements.append(drop_relation_sql(relation)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do statements.extend(restore_additions_sql(replaced)) -%}
    {%- do statements.extend(_record_made(made)) -%}
    {%- do statements.extend(publish_incremental_state()) -%}
    {%- do statements.append('commit') -%}
    {%- do log('outreach: swapped in ' ~ built | length ~ ' relations of ' ~ target.schema, info=true) -%}
    {{ return(statements | join(';\n') ~ ';') }}
{% endmacro %}

{#- The record of the relations builds made in the target schema (reporting_inputs, never published): none before
    the first build that keeps it, so that build drops nothing. -#}
{% macro _made_record() %}
    {{ return(api.Relation.create(database=target.database, schema='reporting_inputs', identifier='built_relations',
        type='table')) }}
{% endmacro %}

{% macro _made_by_builds() %}
    {%- set record = _made_record() -%}
    {%- if record.identifier not in reporting_inputs_tables() -%}{{ return([]) }}{%- endif -%}
    {{ return(run_query('select name from ' ~ record).columns[0].values() | map('lower') | list) }}
{% endmacro %}

{% macro _record_made(names) %}
    {%- set record = _made_record() -%}
    {%- do adapter.create_schema(record) -%}
    {%- set statements = ['create table if not exists ' ~ record ~ ' (name varchar(256))', 'delete from ' ~ record] -%}
    {%- if names -%}
        {%- do statements.append("insert into " ~ record ~ " (name) values ('" ~ (names | sort | join("'), ('")) ~ "')") -%}
    {%- endif -%}
    {{ return(statements) }}
{% endmacro %}

{% macro drop_relation_sql(relation) %}{{ return(adapter.dispatch('drop_relation_sql', 'outreach')(relation)) }}{% endmacro %}
{% macro default__drop_relation_sql(relation) %}
    {{ return('drop ' ~ relation.type ~ ' if exists ' ~ relation ~ ' cascade') }}
{% endmacro %}
{% macro duckdb__drop_relation_sql(relation) %}
    {{ return('drop ' ~ relation.type ~ ' if exists ' ~ relation) }}
{% endmacro %}
