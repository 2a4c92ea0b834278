{#-
    Cross-database building blocks. The models use only these, dbt's own cross-database macros
    (dbt.type_*, dbt.safe_cast) and SQL that DuckDB and PostgreSQL read alike; where the engines
    differ, adapter.dispatch picks `duckdb__` / `postgres__` and `default__` is the shared form.
-#}

{% macro type_double() %}{{ return(adapter.dispatch('type_double', 'outreach')()) }}{% endmacro %}
{% macro default__type_double() %}{{ return('double precision') }}{% endmacro %}

{% macro type_timestamptz() %}{{ return(adapter.dispatch('type_timestamptz', 'outreach')()) }}{% endmacro %}
{% macro default__type_timestamptz() %}{{ return('timestamp with time zone') }}{% endmacro %}

{% macro type_json() %}{{ return(adapter.dispatch('type_json', 'outreach')()) }}{% endmacro %}
{% macro default__type_json() %}{{ return('json') }}{% endmacro %}
{% macro postgres__type_json() %}{{ return('jsonb') }}{% endmacro %}

{#- A contract type name (as written in sources.yml `data_type`) -> this engine's type. -#}
{% macro contract_type(name) %}
    {%- set types = {
        'text': dbt.type_string(),
        'bigint': dbt.type_bigint(),
        'double': type_double(),
        'boolean': dbt.type_boolean(),
        'timestamptz': type_timestamptz(),
        'date': 'date',
        'json': type_json(),
    } -%}
    {%- if name not in types -%}
        {{ exceptions.raise_compiler_error("unknown contract data_type '" ~ name ~ "' (use one of " ~ types.keys() | join(', ') ~ ")") }}
    {%- endif -%}
    {{ return(types[name]) }}
{% endmacro %}

{#- Percentage 0-100 rounded to 2 decimals; null (not an error) when the denominator is 0 or null. -#}
{% macro pct(numerator, denominator) -%}
    case when coalesce({{ denominator }}, 0) = 0 then null
    else {{ round_to('100.0 * cast(' ~ numerator ~ ' as ' ~ type_double() ~ ') / cast(' ~ denominator ~ ' as ' ~ type_double() ~ ')', 2) }} end
{%- endmacro %}

{#- A fraction from 0 to 1 (the unit of every `*_rate` column): numerator / denominator rounded as the service
    rounds its rates (a percentage to 2 decimals, so the fraction to 4), hence equal to the stats endpoint's
    rates.* / 100 as the same double. Rounding is monotone, so human_reply_rate <= reply_rate survives it. Null
    (not an error) when the denominator is 0 or null, or `when_empty` (the primary rates give 0, as the service). -#}
{% macro ratio(numerator, denominator, when_empty='null') -%}
    case when coalesce({{ denominator }}, 0) = 0 then {{ when_empty }}
    else {{ service_round('(100.0 * cast(' ~ numerator ~ ' as ' ~ type_double() ~ ') / cast(' ~ denominator ~ ' as ' ~ type_double() ~ '))') }} / 100.0 end
{%- endmacro %}

{#- A percentage rounded to 2 decimals as the service (Python's round) rounds it: to the nearest of the double's
    exact binary value, an exact tie (x.xx5 representable, e.g. 13.125) to even. DuckDB 2 rounds the exact binary
    value with ties away from zero, so only exact ties need the rule; they are the values where x * 100 ends in .5
    and the tie is a dyadic fraction (2k + 1 divisible by 25), which also rules out a near-tie whose product
    rounded to .5. PostgreSQL rounds via numeric (15 significant digits): a near-tie such as 2.67499999999999982
    (the double of 2.675) can round up there, 0.0001 from the service's figure as a fraction. -#}
{% macro service_round(x) -%}
    case
        when {{ x }} * 100 = floor({{ x }} * 100) + 0.5
            and mod(2 * cast(floor({{ x }} * 100) as {{ dbt.type_bigint() }}) + 1, 25) = 0
            then (floor({{ x }} * 100) + mod(cast(floor({{ x }} * 100) as {{ dbt.type_bigint() }}), 2)) / 100.0
        else {{ round_to(x, 2) }}
    end
{%- endmacro %}

{#- round(x, n) on a double, giving a double (PostgreSQL rounds only numeric). -#}
{% macro round_to(expression, digits) %}{{ return(adapter.dispatch('round_to', 'outreach')(expression, digits)) }}{% endmacro %}
{% macro default__round_to(expression, digits) -%}
    round({{ expression }}, {{ digits }})
{%- endmacro %}
{% macro postgres__round_to(expression, digits) -%}
    cast(round(cast({{ expression }} as numeric), {{ digits }}) as double precision)
{%- endmacro %}

{#- The UTC calendar day of a timestamp with time zone (independent of the session's time zone). -#}
{% macro utc_date(timestamp) %}{{ return(adapter.dispatch('utc_date', 'outreach')(timestamp)) }}{% endmacro %}
{% macro default__utc_date(timestamp) -%}
    cast(({{ timestamp }}) at time zone 'UTC' as date)
{%- endmacro %}

{#- 00:00 UTC of a date, as a timestamp with time zone. -#}
{% macro utc_midnight(day) %}{{ return(adapter.dispatch('utc_midnight', 'outreach')(day)) }}{% endmacro %}
{% macro default__utc_midnight(day) -%}
    (cast({{ day }} as timestamp) at time zone 'UTC')
{%- endmacro %}

{#- Hours from one timestamp to another, counting whole seconds crossed (as dbt.datediff(..., 'second')),
    from epoch seconds so the session time zone plays no part. -#}
{% macro hours_between(start, finish) %}{{ return(adapter.dispatch('hours_between', 'outreach')(start, finish)) }}{% endmacro %}
{% macro default__hours_between(start, finish) -%}
    ((floor(extract(epoch from {{ finish }})) - floor(extract(epoch from {{ start }}))) / 3600.0)
{%- endmacro %}

{#- Median of the non-null values (interpolated between the two middle values). -#}
{% macro median(expression) %}{{ return(adapter.dispatch('median', 'outreach')(expression)) }}{% endmacro %}
{% macro default__median(expression) -%}
    percentile_cont(0.5) within group (order by {{ expression }})
{%- endmacro %}
{% macro duckdb__median(expression) -%}
    median({{ expression }})
{%- endmacro %}

{#- The value at the row with the largest (arg_max) or smallest (arg_min) ordering keys; rows whose value
    or first key is null are skipped. `keys` is one expression or a list (later keys break ties). -#}
{% macro arg_max(value, keys) %}{{ return(adapter.dispatch('arg_extreme', 'outreach')(value, keys, 'desc')) }}{% endmacro %}
{% macro arg_min(value, keys) %}{{ return(adapter.dispatch('arg_extreme', 'outreach')(value, keys, 'asc')) }}{% endmacro %}
{% macro default__arg_extreme(value, keys, direction) -%}
    {%- set keys = [keys] if keys is string else keys -%}
    (array_agg({{ value }} order by {% for k in keys %}{{ k }} {{ direction }}{{ ', ' if not loop.last }}{% endfor %})
        filter (where {{ value }} is not null and {{ keys[0] }} is not null))[1]
{%- endmacro %}
{% macro duckdb__arg_extreme(value, keys, direction) -%}
    {%- set keys = [keys] if keys is string else keys -%}
    {%- set fn = 'arg_max' if direction == 'desc' else 'arg_min' -%}
    {%- if keys | length == 1 -%}
        {{ fn }}({{ value }}, {{ keys[0] }})
    {%- else -%}
        {{ fn }}({{ value }}, struct_pack({% for k in keys %}k{{ loop.index }} := {{ k }}{{ ', ' if not loop.last }}{% endfor %}))
            filter (where {{ keys[0] }} is not null)
    {%- endif -%}
{%- endmacro %}

{#- Cast text to a contract type only when nothing is lost ('42' -> 42, never '42.5' -> 43); else null. -#}
{% macro lossless_cast(expression, contract) %}{{ return(adapter.dispatch('lossless_cast', 'outreach')(expression, contract)) }}{% endmacro %}
{% macro default__lossless_cast(expression, contract) -%}
    {%- set text = 'trim(cast(' ~ expression ~ ' as ' ~ dbt.type_string() ~ '))' -%}
    {%- set patterns = {
        'bigint': '^[+-]?[0-9]{1,18}$',
        'double': '^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$',
        'boolean': '^(true|false|TRUE|FALSE|True|False)$',
        'timestamptz': '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$',
        'date': '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
    } -%}
    {%- if contract == 'text' -%}
        {{ text }}
    {%- elif contract in patterns -%}
        case when {{ regex_matches(text, patterns[contract]) }} then cast({{ text }} as {{ contract_type(contract) }}) end
    {%- else -%}
        cast(null as {{ contract_type(contract) }})
    {%- endif -%}
{%- endmacro %}

{% macro regex_matches(expression, pattern) %}{{ return(adapter.dispatch('regex_matches', 'outreach')(expression, pattern)) }}{% endmacro %}
{% macro default__regex_matches(expression, pattern) -%}
    ({{ expression }} ~ '{{ pattern }}')
{%- endmacro %}
{% macro duckdb__regex_matches(expression, pattern) -%}
    regexp_full_match({{ expression }}, '{{ pattern }}')
{%- endmacro %}

{#- A timestamp with time zone as the wall-clock time of an IANA time zone (a timestamp without time zone).
    The zone must be known to the engine: pass it through known_timezone() first. -#}
{% macro local_time(timestamp, zone) %}{{ return(adapter.dispatch('local_time', 'outreach')(timestamp, zone)) }}{% endmacro %}
{% macro default__local_time(timestamp, zone) -%}
    ({{ timestamp }} at time zone {{ zone }})
{%- endmacro %}
{% macro duckdb__local_time(timestamp, zone) -%}
    timezone({{ zone }}, {{ timestamp }})
{%- endmacro %}

{#- A relation (subquery) with one column `name`: the IANA time zones this engine knows. -#}
{% macro timezone_names() %}{{ return(adapter.dispatch('timezone_names', 'outreach')()) }}{% endmacro %}
{% macro default__timezone_names() -%}
    (select name from pg_timezone_names)
{%- endmacro %}
{% macro duckdb__timezone_names() -%}
    (select name from pg_timezone_names())
{%- endmacro %}

{#- Monday (00:00) of the ISO week of a date, as a date. -#}
{% macro iso_week_start(day) -%}
    cast({{ dbt.date_trunc('week', 'cast(' ~ day ~ ' as timestamp)') }} as date)
{%- endmacro %}

{#- ISO-8601 week-numbering year and week (1-53) of a date, as bigint. -#}
{% macro iso_year(day) -%}
    cast(extract(isoyear from cast({{ day }} as timestamp)) as {{ dbt.type_bigint() }})
{%- endmacro %}
{% macro iso_week(day) -%}
    cast(extract(week from cast({{ day }} as timestamp)) as {{ dbt.type_bigint() }})
{%- endmacro %}

{#- A lead's address as every model keys it: lower case, without the spaces around it (staging, the incremental
    keys). Spaces only (U+0020), as PostgreSQL's trim() strips: DuckDB's trim() also strips other Unicode spaces
    (U+00A0, ...), so the engines would key one address apart. Only an address that starts or ends with a space
    goes through trim(), the costly step of reading millions of addresses on DuckDB; lower() in each branch, not
    around the `case`, whose result DuckDB would first copy every address into. -#}
{% macro lead_email(address) -%}
    case when {{ address }} like ' %' or {{ address }} like '% ' then lower(trim(both ' ' from {{ address }})) else lower({{ address }}) end
{%- endmacro %}

{#- The domain of an email address (the text after its '@'), lower case; null without one. -#}
{% macro email_domain(address) -%}
    nullif({{ dbt.split_part(address, "'@'", 2) }}, '')
{%- endmacro %}

{#- The address's domain is one of the var free_mail_domains (case-insensitive, blanks ignored). -#}
{% macro free_mail(domain) -%}
    {%- set domains = var("free_mail_domains", []) | map("lower") | map("trim") | reject("equalto", "") | list -%}
    {%- if domains -%}
        (lower(trim({{ domain }})) in ({% for name in domains %}{{ sql_string(name) }}{{ ', ' if not loop.last }}{% endfor %}))
    {%- else -%}
        (1 = 0)
    {%- endif -%}
{%- endmacro %}

{#- A value of a var as an SQL string literal: a quote in it doubled, so it stays one string. -#}
{% macro sql_string(value) -%}
    '{{ value | string | replace("'", "''") }}'
{%- endmacro %}
