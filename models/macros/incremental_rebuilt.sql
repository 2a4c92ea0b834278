{#-
    What the BI publish (models/bi_update.py) needs to bring a BI file up to date by replacing the rows of the
    leads a build rebuilt, instead of comparing every row:
    - `incremental_build.build_id`, this build's id, and `previous_build_id`, the last good build's, which the
      touched leads are relative to: null where they are relative to none (no snapshot of the same
      fingerprint, `--full-refresh`: every lead is rebuilt);
    - `incremental_rebuilt_<name>`, each incremental model's touched leads, kept by the swap of a good build
      whose `previous_build_id` is set (the model's `incremental_touched_<name>` is dropped with its undo
      record); none otherwise, or when the model was built from every row.
-#}

{#- Whether this build's touched leads are relative to the last good build's. -#}
{% macro relative_to_previous_build() %}
    {{ return(incremental_state_ready() and not flags.FULL_REFRESH) }}
{% endmacro %}

{#- The snapshot's id columns (`incremental_build`). -#}
{% macro build_ids_columns() %}
    {%- set previous = '(select build_id from ' ~ incremental_state_relation('build') ~ ')'
        if relative_to_previous_build() else 'null' -%}
    {{ return('cast(gen_random_uuid() as ' ~ dbt.type_string() ~ ') as build_id, cast(' ~ previous ~ ' as '
        ~ dbt.type_string() ~ ') as previous_build_id') }}
{% endmacro %}

{% macro rebuilt_leads_relation(model_name) %}{{ return(incremental_state_relation('rebuilt_' ~ model_name)) }}{% endmacro %}

{#- In the swap of a good build: each incremental model's touched leads replace the previous build's (rendered
    before the swap replaces the snapshot, so `relative_to_previous_build` answers as at the build's start). -#}
{% macro keep_rebuilt_leads_sql() %}
    {%- set statements = [] -%}
    {%- set keep = relative_to_previous_build() -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental' -%}
            {%- set kept = rebuilt_leads_relation(node.name) -%}
            {%- do statements.append('drop table if exists ' ~ kept) -%}
            {%- if keep -%}
                {%- do statements.append('alter table if exists ' ~ touched_leads_relation(node.name)
                    ~ ' rename to ' ~ adapter.quote(kept.identifier)) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements) }}
{% endmacro %}
