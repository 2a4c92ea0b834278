{#-
    dbt's persist_docs (the project's `+persist_docs`), in one statement per model. dbt's own reads the
    relation's columns twice per model (a query each, its rows made into an agate table) only to leave out
    documented columns the relation lacks. Here every documented column is commented on as it is: the shape test
    (tests/models/test_models_build.py) holds each model's documented columns equal to its columns, and a
    column that is missing anyway fails the model naming it instead of being skipped with a warning.
-#}

{% macro duckdb__persist_docs(relation, model, for_relation, for_columns) %}
    {{ return(outreach_persist_docs(relation, model, for_relation, for_columns)) }}
{% endmacro %}

{% macro postgres__persist_docs(relation, model, for_relation, for_columns) %}
    {{ return(outreach_persist_docs(relation, model, for_relation, for_columns)) }}
{% endmacro %}

{% macro outreach_persist_docs(relation, model, for_relation, for_columns) %}
    {%- set statements = [] -%}
    {%- if for_relation and config.persist_relation_docs() and model.description -%}
        {%- do statements.append(alter_relation_comment(relation, model.description) | trim | trim(';')) -%}
    {%- endif -%}
    {%- if for_columns and config.persist_column_docs() -%}
        {%- for name, column in model.columns.items() -%}
            {%- do statements.append('comment on column ' ~ relation ~ '.'
                ~ (adapter.quote(name) if column.quote else name) ~ ' is ' ~ outreach_escape_comment(column.description)) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if statements -%}
        {%- do run_query(statements | join(';\n')) -%}
    {%- endif -%}
{% endmacro %}

{%- macro outreach_escape_comment(comment) -%}
    {%- if target.type == 'postgres' -%}{{ postgres_escape_comment(comment) }}{%- else -%}{{ duckdb_escape_comment(comment) }}{%- endif -%}
{%- endmacro -%}
