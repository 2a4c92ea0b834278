{#-
    What the BI publish (models/bi_update.py) needs to bring a BI file up to date by replacing the rows of the
    leads a build rebuilt, instead of comparing every row:
    - `incremental_build.build_id`, this build's id, and `previous_build_id`, the last good build's, which the
      touched leads are relative to: null where they are relative to none (no snapshot of the same
      fingerprint, `--full-refresh`);
    - `incremental_rebuilt_<name>`, each incremental model's touched leads, kept by the swap of a good build
      (the model's `incremental_touched_<name>` is dropped with its undo record); none when the model was
      built from every row.
-#}

{#- The snapshot's id columns (`incremental_build`). -#}
{% macro build_ids_columns() %}
    {%- set previous = '(select build_id from ' ~ incremental_state_relation('build') ~ ')'
        if incremental_state_ready() and not flags.FULL_REFRESH else 'null' -%}
    {{ return('cast(gen_random_uuid() as ' ~ dbt.type_string() ~ ') as build_id, cast(' ~ previous ~ ' as '
        ~ dbt.type_string() ~ ') as previous_build_id') }}
{% endmacro %}

{% macro rebuilt_leads_relation(model_name) %}{{ return(incremental_state_relation('rebuilt_' ~ model_name)) }}{% endmacro %}

{#- In the swap of a good build: each incremental model's touched leads replace the previous build's. -#}
{% macro keep_rebuilt_leads_sql() %}
    {%- set statements = [] -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental' -%}
            {%- set kept = rebuilt_leads_relation(node.name) -%}
            {%- do statements.extend(['drop table if exists ' ~ kept, 'alter table if exists '
                ~ touched_leads_relation(node.name) ~ ' rename to ' ~ adapter.quote(kept.identifier)]) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements) }}
{% endmacro %}
