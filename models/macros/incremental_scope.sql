{#-
    The data tests of an incremental model read only the rows that its build can have changed. The last good
    build's tests passed on every row, with the same project and vars (the snapshot's fingerprint,
    macros/incremental.sql), and an incremental build rewrites only the touched leads' rows. So a model_rules
    test (macros/tests/model_rules.sql) with `incremental_scope: {touched_leads: <the model>}` checks
    not_null, accepted_values and relationships on the touched leads' rows, and `unique` on every row that
    shares a key with one of them. Every row is checked in `dbt test`, with `--full-refresh`, without a
    published snapshot of the same fingerprint, when the model is not part of the run, or when it was built
    from every row (its pre-hook then drops the touched-leads table).
-#}

{#- A condition on the tested model's rows (unqualified columns), or none: check every row. -#}
{% macro incremental_test_scope(scope) %}
    {%- if not (execute and scope and flags.WHICH == 'build') or flags.FULL_REFRESH or not incremental_state_ready() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set touched = touched_leads_relation(scope.touched_leads) -%}
    {%- if 'model.' ~ project_name ~ '.' ~ scope.touched_leads not in selected_resources
        or touched.identifier not in reporting_inputs_tables() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return("(coalesce(workspace_id, ''), coalesce(lead_email, '')) in (select workspace_key, lead_key from "
        ~ touched ~ ')') }}
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
