{#- The contract type name for a raw column's actual type (text when unknown). -#}
{% macro contract_of(column) %}
    {%- if column is none -%}{{ return('text') }}{%- endif -%}
    {%- set dtype = column.dtype | lower -%}
    {%- if column.is_integer() -%}{{ return('bigint') }}
    {%- elif column.is_float() or column.is_numeric() -%}{{ return('double') }}
    {%- elif 'bool' in dtype -%}{{ return('boolean') }}
    {%- elif 'timestamp' in dtype -%}{{ return('timestamptz') }}
    {%- elif dtype == 'date' -%}{{ return('date') }}
    {%- else -%}{{ return('text') }}
    {%- endif -%}
{% endmacro %}
