{#-
    The data tests of an incremental model read only the rows that its build can have changed. The last good
    build's tests passed on every row, with the same project and vars (the snapshot's fingerprint,
    macros/incremental.sql), and an incremental build rewrites only the touched leads' rows. So a model_rules
    test (macros/tests/model_rules.sql) with `incremental_scope: {touched_leads: <the model>}` checks
    not_null, accepted_values and relationships on the touched leads' rows, and `unique` on every row that
    shares a key with one of them. A staging model's test with `incremental_scope: {changed_rows: <raw table>,
    id_column: <its column holding the raw id>}` does the same for the rows of the raw table written or marked
    deleted since the snapshot (`changed_rows_relation`, which the on-run-start hook fills). Every row is checked in `dbt test`, with `--full-refresh`, without a
    published snapshot of the same fingerprint, when the model is not part of the run, or when it was built
    from every row (its pre-hook then drops the touched-leads table).
-#}

{#- A condition on the tested model's rows (unqualified columns), or none: check every row. -#}
{% macro incremental_test_scope(scope) %}
    {%- if not (execute and scope and flags.WHICH == 'build') or flags.FULL_REFRESH or not incremental_state_ready() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if scope.changed_rows -%}
        {%- if changed_rows_relation(scope.changed_rows).identifier not in reporting_inputs_tables() -%}
            {{ return(none) }}
        {%- endif -%}
        {{ return(scope.id_column ~ ' in (select id from ' ~ changed_rows_relation(scope.changed_rows) ~ ')') }}
    {%- endif -%}
    {%- set touched = touched_leads_relation(scope.touched_leads) -%}
    {%- if 'model.' ~ project_name ~ '.' ~ scope.touched_leads not in selected_resources
        or touched.identifier not in reporting_inputs_tables() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return("(coalesce(workspace_id, ''), coalesce(lead_email, '')) in (select workspace_key, lead_key from "
        ~ touched ~ ')') }}
{% endmacro %}

{#- The tested model's columns that incremental_test_scope's condition reads. -#}
{% macro incremental_scope_columns(scope) %}
    {{ return([scope.id_column] if scope.changed_rows else ['workspace_id', 'lead_email']) }}
{% endmacro %}

{#- Whether the run includes every test whose scope the snapshot moves: otherwise the next build would
    leave the rows changed until now unchecked. -#}
{% macro scoped_tests_selected() %}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'test' and (node.test_metadata or {}).get('kwargs', {}).get('incremental_scope')
            and node.unique_id not in selected_resources -%}
            {{ return(false) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(true) }}
{% endmacro %}

{#- The raw tables whose changed rows a test's scope reads (`changed_rows`). -#}
{% macro changed_rows_tables() %}
    {%- set found = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- set scope = (node.test_metadata or {}).get('kwargs', {}).get('incremental_scope') or {} -%}
        {%- if node.resource_type == 'test' and scope.changed_rows and scope.changed_rows not in found -%}
            {%- do found.append(scope.changed_rows) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(found) }}
{% endmacro %}

{% macro changed_rows_relation(table_name) %}{{ return(incremental_state_relation('changed_' ~ table_name)) }}{% endmacro %}

{#- The on-run-start hook's statements: the ids of each such table's rows changed since the published snapshot,
    in a table of their own (read inline, a scope's few ids would be planned as millions); none without a
    snapshot to trust, so that no earlier run's ids are ever read. -#}
{% macro changed_rows_sql() %}
    {%- set statements = drop_changed_rows_sql() -%}
    {%- set ready = not flags.FULL_REFRESH and incremental_state_ready() -%}
    {%- for table_name in changed_rows_tables() -%}
        {%- if ready and 'id' in raw_columns(table_name) -%}
            {%- do statements.append('create table ' ~ changed_rows_relation(table_name) ~ ' as select id from '
                ~ raw_relation(table_name) ~ ' where ' ~ raw_rows_where(table_name, changed_since_snapshot(table_name))) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements) }}
{% endmacro %}

{% macro drop_changed_rows_sql() %}
    {%- set statements = [] -%}
    {%- for table_name in changed_rows_tables() -%}
        {%- do statements.append('drop table if exists ' ~ changed_rows_relation(table_name)) -%}
    {%- endfor -%}
    {{ return(statements) }}
{% endmacro %}
