{#-
    Incremental models. A large mart keyed by lead (`lead_engagement`, `lead_timeline`) is rebuilt only for
    the leads that what the syncs changed since the last good build touches; `outreach models --full-refresh` (dbt's
    `--full-refresh`) rebuilds it from every row.

    What changed is read from the raw tables, against a snapshot of the warehouse that the last good build
    took when it started (schema `reporting_inputs`):
    - `incremental_marks`: per raw table, the distinct `synced_at` (the start of the sync run that wrote a
      row) and `deleted_at` values then present. A row whose `synced_at` is not among them was written
      (inserted, merged, re-read by a reconcile) since; a `deleted_at` not among them is a new deletion mark
      (a full sync marks rows the API stopped returning with an UPDATE). Sets, not high-water marks: runs
      of several workspaces can commit out of order. The rows' own timestamps, not dlt's `_dlt_load_id`:
      recipients are loaded as Arrow tables, which dlt gives no load id.
    - `incremental_campaigns`: the campaigns then current (no `_dlt_valid_to`). Closing an scd2 version
      writes no `synced_at`; a campaign that left or came back changes every lead of it.
    - `incremental_loads`: the distinct `_dlt_load_id` of the webhook events then present. Events are
      insert-only and loaded as rows, which dlt stamps with their load's id: a new id is a new event.
    - `incremental_build`: the var `build_fingerprint` of that build (models/build.py: the project's SQL and
      YAML and the build's vars). The rows a build computed and tested hold only for the same project and
      vars: a build with another fingerprint (a new version, a changed var such as `reply_classes`), or with
      none (a plain `dbt build`, which cannot tell), treats the snapshot as missing. It also holds the build's id
      and the last good build's (macros/incremental_rebuilt.sql).
    The snapshot and the models read the same warehouse state because `outreach models` holds the
    warehouse's writer lock (no sync writes during a build). A stale or missing snapshot only rebuilds more
    keys, never fewer; no snapshot at all (the first build, or after the schema was dropped) rebuilds every key.

    The snapshot is taken by the on-run-start hook into `<name>__next` tables and replaces the published one
    only when every model and test passed (inside the swap's transaction with `atomic_build`).

    With `atomic_build`, an incremental model's `<name>__next` must start as the published table (its alias is
    `__next`, macros/atomic_build.sql), so that `is_incremental()` holds: macros/incremental_atomic.sql.

    These macros read raw tables directly (not through staging): staging leaves out deleted rows and closed
    versions, which are exactly what must be found here.
-#}

{% macro incremental_state_tables() %}{{ return(['marks', 'campaigns', 'loads', 'build']) }}{% endmacro %}

{% macro incremental_state_relation(name, suffix='') %}
    {{ return(api.Relation.create(database=target.database, schema='reporting_inputs',
        identifier='incremental_' ~ name ~ suffix, type='table')) }}
{% endmacro %}

{#- A raw table of the sync's schema, declared in sources.yml or dlt's own (`_dlt_loads`). -#}
{% macro raw_relation(table_name) %}
    {%- set node = graph.sources['source.outreach.outreach.campaigns'] -%}
    {{ return(api.Relation.create(database=node.database, schema=node.schema, identifier=table_name)) }}
{% endmacro %}

{#- The raw tables the incremental models read, with their sync and deletion stamps. -#}
{% macro incremental_marked_tables() %}{{ return(['campaign_recipients', 'replies']) }}{% endmacro %}

{#- A published snapshot exists, taken by a build of the same project and vars. -#}
{% macro incremental_state_ready() %}
    {%- if not execute -%}{{ return(false) }}{%- endif -%}
    {%- for name in incremental_state_tables() + ['row_leads'] -%}  {#- row_leads: macros/incremental_row_leads.sql -#}
        {%- set relation = incremental_state_relation(name) -%}
        {%- if adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is none -%}
            {{ return(false) }}
        {%- endif -%}
    {%- endfor -%}
    {%- if not build_fingerprint() -%}{{ return(false) }}{%- endif -%}
    {%- set stored = run_query('select fingerprint from ' ~ incremental_state_relation('build')) -%}
    {{ return(stored.rows | length == 1 and stored.rows[0][0] == build_fingerprint()) }}
{% endmacro %}

{% macro build_fingerprint() %}{{ return(var('build_fingerprint', '') | string) }}{% endmacro %}

{#- The columns of raw `table_name`, lower-cased; none if the table does not exist yet. -#}
{% macro raw_columns(table_name) %}
    {%- set found = [] -%}
    {%- set relation = adapter.get_relation(database=raw_relation(table_name).database,
        schema=raw_relation(table_name).schema, identifier=table_name) -%}
    {%- if relation is not none -%}
        {%- for column in adapter.get_columns_in_relation(relation) -%}{%- do found.append(column.name | lower) -%}{%- endfor -%}
    {%- endif -%}
    {{ return(found) }}
{% endmacro %}

{#- The stamp columns (synced_at, deleted_at) that raw `table_name` has. A warehouse synced by an older
    version may lack one: its rows then count as changed in every build (correct, only slower). -#}
{% macro raw_stamp_columns(table_name) %}{{ return(stamp_columns(raw_columns(table_name))) }}{% endmacro %}
{% macro stamp_columns(columns) %}{{ return(columns | select('in', ['synced_at', 'deleted_at']) | list) }}{% endmacro %}

{#- A condition on a raw row of `table_name` (columns unqualified): written or marked deleted since the snapshot.
    `stamps`: raw_stamp_columns(table_name), when the caller has read them already. -#}
{% macro changed_since_snapshot(table_name, stamps=none) -%}
    {%- set marks = incremental_state_relation('marks') -%}
    {%- set stamps = raw_stamp_columns(table_name) if stamps is none else stamps -%}
    {%- if 'synced_at' not in stamps -%}
        1 = 1
    {%- else -%}
    ((synced_at is not null and synced_at not in (
            select stamp from {{ marks }} where table_name = '{{ table_name }}' and column_name = 'synced_at'))
        {%- if 'deleted_at' in stamps %}
        or (deleted_at is not null and deleted_at not in (
            select stamp from {{ marks }} where table_name = '{{ table_name }}' and column_name = 'deleted_at'))
        {%- endif -%}
    )
    {%- endif -%}
{%- endmacro %}

{#- A condition on raw `table_name`'s rows (columns unqualified), for `from <that table> where ...`. On DuckDB
    the rows are first picked by rowid: a condition on the stamps is a join (the marks are a set), which DuckDB
    does not push into the scan, so every column the query reads would be read from every row. -#}
{% macro raw_rows_where(table_name, condition) %}
    {%- if condition | trim == '1 = 1' -%}{{ return('1 = 1') }}{%- endif -%}
    {{ return(adapter.dispatch('raw_rows_where', 'outreach')(table_name, condition)) }}
{% endmacro %}
{% macro default__raw_rows_where(table_name, condition) %}{{ return('(' ~ condition ~ ')') }}{% endmacro %}
{% macro duckdb__raw_rows_where(table_name, condition) %}
    {{ return('rowid in (select rowid from ' ~ raw_relation(table_name) ~ ' where ' ~ condition ~ ')') }}
{% endmacro %}

{% macro current_raw_campaigns() -%}
    select distinct id as campaign_id from {{ raw_relation('campaigns') }} where _dlt_valid_to is null
{%- endmacro %}

{#- Campaigns that became current or stopped being current since the snapshot. -#}
{% macro changed_campaigns() -%}
    select campaign_id from (
        ({{ current_raw_campaigns() }}) except (select campaign_id from {{ incremental_state_relation('campaigns') }})
    ) as arrived
    union
    select campaign_id from (
        (select campaign_id from {{ incremental_state_relation('campaigns') }}) except ({{ current_raw_campaigns() }})
    ) as left_campaigns
{%- endmacro %}

{#- (workspace_key, lead_key) of every lead a change touched: its workspace and its address as staging
    normalises it, '' for none (null and '' are rebuilt together: rebuilding more is always safe), and the
    lead a re-written row named before, where its address changed (macros/incremental_row_leads.sql). -#}
{% macro touched_recipient_leads() -%}
    {%- set address = lead_address_columns() -%}
    select {{ lead_key_columns(lead_email(address['campaign_recipients'])) }}
    from {{ raw_relation('campaign_recipients') }}
    where {{ raw_rows_where('campaign_recipients', changed_since_snapshot('campaign_recipients')
        ~ ' or campaign_id in (' ~ changed_campaigns() ~ ')') }}
    union
    select {{ lead_key_columns(lead_email(address['replies'])) }}
    from {{ raw_relation('replies') }}
    where {{ raw_rows_where('replies', changed_since_snapshot('replies')) }}
    union
    {{ left_leads() }}
{%- endmacro %}

{#- The leads of webhook events loaded since the snapshot (events are insert-only: a new event has a new
    `_dlt_load_id`), and of events without a workspace whose campaign arrived, which now take its workspace:
    their lead as staging resolves it now, and as the model's table holds it. -#}
{% macro touched_event_leads() -%}
    {%- set columns = raw_columns('events') -%}
    {%- if not columns -%}
        select '' as workspace_key, '' as lead_key where 1 = 0
    {%- else -%}
        {%- set loaded = '1 = 1' if '_dlt_load_id' not in columns else '_dlt_load_id not in (select load_id from '
            ~ incremental_state_relation('loads') ~ " where table_name = 'events')" -%}
        with changed as (
            select event_id from {{ raw_relation('events') }}
            where {{ loaded }} or (workspace_id is null and campaign_id in ({{ changed_campaigns() }}))
        )
        select {{ lead_key_columns() }}
        from {{ ref('stg_events') }} where event_id in (select event_id from changed)
        union
        select {{ lead_key_columns() }}
        from {{ this }} where event_id in (select event_id from changed)
    {%- endif -%}
{%- endmacro %}

{#- The lead keys of a row (workspace_id, lead_email; `address` when the lead's address is another expression),
    as a touched-leads table holds them: '' for none. -#}
{% macro lead_key_columns(address='lead_email') -%}
    coalesce(workspace_id, '') as workspace_key, coalesce({{ address }}, '') as lead_key
{%- endmacro %}

{#- A condition matching a row of `target` (workspace_id, lead_email) to a touched lead of `touched`. -#}
{% macro touched_lead_match(touched, target) -%}
    {{ touched }}.workspace_key = coalesce({{ target }}.workspace_id, '') and {{ touched }}.lead_key = coalesce({{ target }}.lead_email, '')
{%- endmacro %}

{#- The model's pre-hook, in the model's transaction: the touched leads (the macro named `touched_leads_macro`;
    every lead without a snapshot) into a table of their own, the old rows of them into the undo record where one is kept
    (macros/incremental_atomic.sql), and those rows dropped: a lead whose rows are all gone gets no new row,
    so delete+insert alone would keep it. A join (`using`), not a correlated `exists`: DuckDB runs the
    `exists` form several times slower over millions of leads. -#}
{% macro delete_touched_leads(touched_leads_macro) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set touched = touched_leads_relation(model.name) -%}
    {#- a build from every row leaves no touched leads: its tests read every row (macros/incremental_scope.sql) -#}
    {%- if not is_incremental() -%}{{ return('drop table if exists ' ~ touched) }}{%- endif -%}
    {%- set keys = context[touched_leads_macro]() if incremental_state_ready()
        else 'select distinct ' ~ lead_key_columns() ~ ' from ' ~ this -%}
    {%- set statements = ['drop table if exists ' ~ touched, 'create table ' ~ touched ~ ' as ' ~ keys] -%}
    {%- if keeps_undo_record() -%}
        {#- DuckDB: the rows are found once (a join on two strings over millions of rows) and then copied and
            deleted by their rowid, which holds within the model's transaction -#}
        {%- set found = adapter.quote('touched_rows_' ~ model.name) -%}
        {%- set rows_found = ' where rowid in (select touched_rowid from ' ~ found ~ ')' -%}
        {%- do statements.extend([
            'create or replace temporary table ' ~ found ~ ' as select target.rowid as touched_rowid from ' ~ this
                ~ ' as target inner join ' ~ touched ~ ' as touched on ' ~ touched_lead_match('touched', 'target'),
            'insert into ' ~ undo_relation(model.name) ~ ' select * from ' ~ this ~ rows_found,
            'delete from ' ~ this ~ rows_found,
            'drop table ' ~ found]) -%}
    {%- else -%}
        {%- do statements.append('delete from ' ~ this ~ ' as target using ' ~ touched ~ ' as touched where '
            ~ touched_lead_match('touched', 'target')) -%}
    {%- endif -%}
    {{ return(statements | join(';\n')) }}
{% endmacro %}

{#- A join clause restricting `alias` (workspace_id, lead_email) to the touched leads (the pre-hook's table,
    one row per lead, so the join repeats no row) on an incremental run with a snapshot; nothing otherwise. -#}
{% macro join_touched_leads(alias) -%}
    {%- if execute and is_incremental() and incremental_state_ready() -%}
        inner join {{ touched_leads_relation(model.name) }} as touched on {{ touched_lead_match('touched', alias) }}
    {%- endif -%}
{%- endmacro %}

{#- on-run-start: snapshot what the warehouse holds now, and give each incremental model its starting copy
    (and on PostgreSQL gather the raw tables' planner statistics first: macros/planner_statistics.sql). -#}
{% macro outreach_start_build() %}
    {%- if not execute or flags.WHICH not in ['build', 'run'] -%}{{ return('') }}{%- endif -%}
    {%- set statements = [adapter.dispatch('create_inputs_schema_sql', 'outreach')()] + analyze_sources_sql()
        + changed_rows_sql() -%}
    {%- set marks = ['select cast(null as ' ~ dbt.type_string() ~ ') as table_name, cast(null as '
        ~ dbt.type_string() ~ ') as column_name, cast(null as ' ~ type_timestamptz() ~ ') as stamp where 1 = 0'] -%}
    {%- for table_name in incremental_marked_tables() -%}
        {%- for column_name in raw_stamp_columns(table_name) -%}
            {%- do marks.append("select distinct '" ~ table_name ~ "' as table_name, '" ~ column_name
                ~ "' as column_name, " ~ column_name ~ ' as stamp from ' ~ raw_relation(table_name)
                ~ ' where ' ~ column_name ~ ' is not null') -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set loads = ['select cast(null as ' ~ dbt.type_string() ~ ') as table_name, cast(null as '
        ~ dbt.type_string() ~ ') as load_id where 1 = 0'] -%}
    {%- if '_dlt_load_id' in raw_columns('events') -%}
        {%- do loads.append("select distinct 'events', _dlt_load_id from " ~ raw_relation('events')) -%}
    {%- endif -%}
    {%- set fingerprint = "select cast('" ~ build_fingerprint().replace("'", "''") ~ "' as " ~ dbt.type_string()
        ~ ') as fingerprint, ' ~ build_ids_columns() -%}
    {%- set snapshot_sql = {'marks': marks | join(' union all '), 'campaigns': current_raw_campaigns(),
        'loads': loads | join(' union all '), 'build': fingerprint} -%}
    {%- for name in incremental_state_tables() -%}
        {%- set relation = incremental_state_relation(name, next_suffix()) -%}
        {%- do statements.append('drop table if exists ' ~ relation) -%}
        {%- do statements.append('create table ' ~ relation ~ ' as ' ~ snapshot_sql[name]) -%}
    {%- endfor -%}
    {%- if var('atomic_build', false) -%}
        {%- set inputs_tables = reporting_inputs_tables() if target.type == 'duckdb' else [] -%}
        {%- for node in graph.nodes.values() -%}
            {%- if node.resource_type == 'model' and node.config.materialized == 'incremental' -%}
                {%- do statements.extend(start_incremental_relation(node, inputs_tables)) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {#- run here, in a transaction of its own that is committed: reading the raw tables' columns above
        opened one on dbt's connection, which dbt rolls back after the hook -#}
    {%- call statement('outreach_start_build', auto_begin=true) -%}
        {{ statements | join(';\n') }}
    {%- endcall -%}
    {%- do adapter.commit() -%}
    {{ return('') }}
{% endmacro %}

{% macro default__create_inputs_schema_sql() %}
    {{ return('create schema if not exists ' ~ adapter.quote('reporting_inputs')) }}
{% endmacro %}
{#- DuckDB's connection starts in its in-memory catalog: name the warehouse's -#}
{% macro duckdb__create_inputs_schema_sql() %}
    {{ return('create schema if not exists ' ~ adapter.quote(target.database) ~ '.' ~ adapter.quote('reporting_inputs')) }}
{% endmacro %}

{#- After a good build: the snapshot becomes the published one, if this run built every incremental model
    and ran every test scoped to the changes (macros/incremental_scope.sql): a `dbt run`, or a `--select` of
    some, keeps the old snapshot, so the next build still sees the changes since. -#}
{% macro publish_incremental_state() %}
    {%- set statements = [] -%}
    {%- if flags.WHICH not in ['build', 'run'] -%}{{ return(statements) }}{%- endif -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental'
            and node.unique_id not in selected_resources -%}
            {{ return(discard_incremental_state()) }}
        {%- endif -%}
    {%- endfor -%}
    {%- if not scoped_tests_selected() -%}{{ return(discard_incremental_state()) }}{%- endif -%}
    {#- first: what changed since the snapshot is read against the published one, replaced below -#}
    {%- do statements.extend(update_row_leads_sql() + keep_rebuilt_leads_sql()) -%}
    {%- for name in incremental_state_tables() -%}
        {%- do statements.append('drop table if exists ' ~ incremental_state_relation(name)) -%}
        {%- do statements.append('alter table ' ~ incremental_state_relation(name, next_suffix())
            ~ ' rename to ' ~ adapter.quote('incremental_' ~ name)) -%}
    {%- endfor -%}
    {%- do statements.extend(drop_run_records()) -%}
    {{ return(statements) }}
{% endmacro %}

{#- The run's state: the snapshot it took, the ids of the raw rows changed since the last one, and each
    incremental model's touched leads and undo record. -#}
{% macro discard_incremental_state() %}
    {%- set statements = [] -%}
    {%- for name in incremental_state_tables() -%}
        {%- do statements.append('drop table if exists ' ~ incremental_state_relation(name, next_suffix())) -%}
    {%- endfor -%}
    {%- do statements.extend(drop_run_records()) -%}
    {{ return(statements) }}
{% endmacro %}

{% macro drop_run_records() %}
    {%- set statements = drop_changed_rows_sql() -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.config.materialized == 'incremental' -%}
            {%- do statements.extend(drop_undo_sql(node)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(statements) }}
{% endmacro %}
