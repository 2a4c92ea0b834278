{#-
    Where a re-written row's lead was. The touched leads of a raw row are read from the row as it is now
    (macros/incremental.sql). A row whose address changed (a lead's address corrected in the service) also
    leaves the lead it named before, and no raw table names that lead any more: its row in the model would stay.

    `reporting_inputs.incremental_row_leads` keeps, per row of a marked table that staging kept at the last good
    build, a hash of its id and a hash of its lead (workspace_key, lead_key). The touched leads include each lead
    that a row written since then has left (`left_leads`). Hashes, not the keys themselves: two integers a row
    where the keys are three strings, and every full build writes the table whole. A collision only rebuilds a
    lead more.

    A good build brings it up to date in the swap's transaction, with the snapshot it publishes
    (`update_row_leads_sql`): the rows written since the snapshot replace theirs; a build without a ready snapshot,
    or with --full-refresh, writes it whole. A failed build leaves it as the last good build left it.
-#}

{% macro row_leads_relation() %}{{ return(incremental_state_relation('row_leads')) }}{% endmacro %}

{#- The column of each marked raw table that names the row's lead (its address). -#}
{% macro lead_address_columns() %}{{ return({'campaign_recipients': 'email', 'replies': '"from"'}) }}{% endmacro %}

{% macro text_hash(expression) %}{{ return(adapter.dispatch('text_hash', 'outreach')(expression)) }}{% endmacro %}
{% macro default__text_hash(expression) %}{{ return('hashtextextended(' ~ expression ~ ', 0)') }}{% endmacro %}
{% macro duckdb__text_hash(expression) %}{{ return('hash(' ~ expression ~ ')') }}{% endmacro %}

{#- The hash of a lead's keys, as a touched-leads table holds them ('' for none). -#}
{% macro lead_hash(workspace_key, lead_key) -%}
    {{ text_hash(workspace_key ~ ' || chr(31) || ' ~ lead_key) }}
{%- endmacro %}

{#- `select table_name, row_hash, lead_hash` of raw `table_name`'s rows where `condition` holds; with `live`,
    only those staging keeps (not marked deleted). `stamps`: its stamp columns (`row_lead_tables`). -#}
{% macro row_leads_sql(table_name, stamps, condition='1 = 1', live=true) -%}
    select '{{ table_name }}' as table_name, {{ text_hash('id') }} as row_hash,
        {{ lead_hash("coalesce(workspace_id, '')", "coalesce(" ~ lead_email(lead_address_columns()[table_name]) ~ ", '')") }} as lead_hash
    from {{ raw_relation(table_name) }}
    where {{ raw_rows_where(table_name, condition) }}
    {%- if live and 'deleted_at' in stamps %} and deleted_at is null{% endif %}
{%- endmacro %}

{#- {table_name: its stamp columns} of the marked tables the sync has created, with the columns the hashes read:
    each raw table's columns are read once (a query each). -#}
{% macro row_lead_tables() %}
    {%- set found = {} -%}
    {%- for table_name, address in lead_address_columns().items() -%}
        {%- set columns = raw_columns(table_name) -%}
        {%- if 'id' in columns and 'workspace_id' in columns and address.strip('"') in columns -%}
            {%- do found.update({table_name: stamp_columns(columns)}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(found) }}
{% endmacro %}

{#- The hashes of the leads that rows written since the snapshot named at the last good build and name no more. -#}
{% macro left_lead_hashes() -%}
    select held.lead_hash from {{ row_leads_relation() }} as held where 1 = 0
    {%- for table_name, stamps in row_lead_tables().items() %}
    union all
    select held.lead_hash
    from {{ row_leads_relation() }} as held
    inner join ({{ row_leads_sql(table_name, stamps, changed_since_snapshot(table_name, stamps), live=false) }}) as now
        on held.table_name = now.table_name and held.row_hash = now.row_hash
    where held.lead_hash <> now.lead_hash
    {%- endfor %}
{%- endmacro %}

{#- The leads of the model's own rows (`this`) that a re-written row has left. -#}
{% macro left_leads() -%}
    select {{ lead_key_columns() }}
    from {{ this }}
    where {{ lead_hash("coalesce(workspace_id, '')", "coalesce(lead_email, '')") }} in ({{ left_lead_hashes() }})
{%- endmacro %}

{#- The swap's statements that make the table describe the raw rows as this build read them. -#}
{% macro update_row_leads_sql() %}
    {%- set relation = row_leads_relation() -%}
    {%- set tables = row_lead_tables() -%}
    {%- set statements = [] -%}
    {%- if flags.FULL_REFRESH or not incremental_state_ready() -%}
        {%- set rows = ["select cast(null as " ~ dbt.type_string() ~ ") as table_name, " ~ text_hash("''")
            ~ " as row_hash, " ~ text_hash("''") ~ " as lead_hash where 1 = 0"] -%}
        {%- for table_name, stamps in tables.items() -%}{%- do rows.append(row_leads_sql(table_name, stamps)) -%}{%- endfor -%}
        {%- do statements.extend(['drop table if exists ' ~ relation, 'create table ' ~ relation ~ ' as ' ~ rows | join(' union all ')]) -%}
    {%- else -%}
        {%- for table_name, stamps in tables.items() -%}
            {%- set changed = changed_since_snapshot(table_name, stamps) -%}
            {%- do statements.append('delete from ' ~ relation ~ " where table_name = '" ~ table_name ~ "' and row_hash in ("
                ~ 'select ' ~ text_hash('id') ~ ' from ' ~ raw_relation(table_name) ~ ' where '
                ~ raw_rows_where(table_name, changed) ~ ')') -%}
            {%- do statements.append('insert into ' ~ relation ~ ' ' ~ row_leads_sql(table_name, stamps, changed)) -%}
        {%- endfor -%}
    {%- endif -%}
    {#- reading the raw tables' columns opened a transaction on dbt's connection: closed, so that the swap's
        own `begin` starts the only one -#}
    {%- call statement('outreach_row_leads_read', auto_begin=true) -%} select 1 {%- endcall -%}
    {%- do adapter.commit() -%}
    {{ return(statements) }}
{% endmacro %}
