{#-
    PostgreSQL plans each query from its tables' statistics, which only ANALYZE gathers (autovacuum runs it a
    minute or more after a table changed). A build starts right after a sync loaded the raw tables, and each
    table model is read by the next models at once: without statistics PostgreSQL guesses their sizes and
    picks plans far slower than the ones it picks with them (bench/pg_statistics.py measures a build right
    after a load both ways). So the build gathers them itself: for the raw tables when it starts (one statement),
    and for every table it builds right after building it (the model's post-hook). DuckDB keeps statistics
    as it writes: nothing to do there.

    ANALYZE skips, with a warning and no error, a table the build's user does not own (an analyst's
    read-only access to the raw schema).
-#}

{#- The on-run-start statements: ANALYZE of the raw tables that exist (none before the first sync). -#}
{% macro analyze_sources_sql() %}
    {%- if target.type != 'postgres' -%}{{ return([]) }}{%- endif -%}
    {%- set tables = [] -%}
    {%- for source in graph.sources.values() -%}
        {%- set relation = adapter.get_relation(database=source.database, schema=source.schema,
            identifier=source.identifier) -%}
        {%- if relation is not none and relation.is_table -%}{%- do tables.append(relation | string) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(['analyze ' ~ tables | join(', ')] if tables else []) }}
{% endmacro %}

{#- Every model's post-hook (dbt_project.yml): ANALYZE the table it built. -#}
{% macro analyze_built_table(relation) %}
    {%- if target.type == 'postgres' and config.get('materialized') in ['table', 'incremental'] -%}
        analyze {{ relation }}
    {%- endif -%}
{% endmacro %}
