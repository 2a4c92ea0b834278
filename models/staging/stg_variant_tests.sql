-- The A/B statistics `outreach models` computes with statsmodels before dbt runs (models/ab_test.py).
-- A plain `dbt build` on a warehouse where `outreach models` never ran finds no table: then no statistics
-- (every variant reads "no winner yet" without figures) and a warning saying how to get them.
{%- set relation = source('reporting_inputs', 'variant_tests') %}
{%- set existing = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) if execute else relation %}
{%- set columns = [
    ('campaign_id', dbt.type_string()), ('variant_index', dbt.type_bigint()),
    ('estimated_recipients', dbt.type_bigint()), ('reply_rate', type_double()),
    ('reply_rate_ci_low', type_double()), ('reply_rate_ci_high', type_double()),
    ('compared_variant_index', dbt.type_bigint()), ('z_score', type_double()), ('p_value', type_double()),
    ('adjusted_p_value', type_double()), ('is_winner', dbt.type_boolean()), ('test_state', dbt.type_string()),
    ('recipients_needed', dbt.type_bigint()),
] %}
{%- if existing is none %}
{%- do exceptions.warn("reporting_inputs.variant_tests does not exist: run `outreach models` (it computes the A/B statistics) rather than a plain `dbt build`") %}
select
{%- for name, type in columns %}
    cast(null as {{ type }}) as {{ name }}{{ ',' if not loop.last }}
{%- endfor %}
where 1 = 0
{%- else %}
select
{%- for name, type in columns %}
    cast({{ name }} as {{ type }}) as {{ name }}{{ ',' if not loop.last }}
{%- endfor %}
from {{ relation }}
{%- endif %}
