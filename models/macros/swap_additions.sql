{#-
    What a DBA or an analyst added to the published relations, kept across the swap on PostgreSQL, where the swap
    drops each old relation and renames its new one in:
    - the grants on a mart (`grant select on reporting.x to bi_reader`): a new table has none, so a BI role lost
      its access at every build;
    - the views that read a mart, in any schema, and the views over them: there a view is bound to the relations
      it reads by their ids, not their names, so the old table's `drop ... cascade` dropped them at every build.
    The swap saves them first (view definitions by `pg_get_viewdef`, read with only pg_catalog on the search path,
    so every other name in them is schema-qualified), then, after its renames and in the same transaction, makes
    the views again in dependency order with their options, comment and (where the build's role may give it)
    owner, and grants again what was granted on each. A view that cannot be made again (it reads a column the
    new build no longer has) fails the swap, naming the view: the published relations, that view included, stay
    as they were. A removed model's relation that a view reads is not dropped (`views_reading`).

    DuckDB binds a view to names when it is read, and has no grants: nothing to do there.
-#}

{#- Statements, after the swap's `begin` and before its drops: save the grants on `relations` (the published relations
    the swap drops) and the views that read them, leaving out the relations named `own_names` in the target schema
    (what the swap replaces itself). -#}
{% macro save_additions_sql(relations, own_names) %}
    {{ return(adapter.dispatch('save_additions_sql', 'outreach')(relations, own_names)) }}
{% endmacro %}
{% macro default__save_additions_sql(relations, own_names) %}{{ return([]) }}{% endmacro %}
{% macro postgres__save_additions_sql(relations, own_names) %}
    {%- if not relations -%}{{ return([]) }}{%- endif -%}
    {%- set ids = _regclasses(relations) -%}
    {%- set own = "'" ~ (own_names | join("', '")) ~ "'" -%}
    {{ return([
        'create temporary table outreach_search_path on commit drop as select current_setting(\'search_path\') as value',
        'set local search_path to pg_catalog',
        "create temporary table outreach_kept_views on commit drop as
        with recursive readers (oid, depth) as (
            select rewrite.ev_class, 1
            from pg_depend as dep
            inner join pg_rewrite as rewrite on dep.objid = rewrite.oid
            where dep.classid = 'pg_rewrite'::regclass and dep.refclassid = 'pg_class'::regclass
                and dep.refobjid in (" ~ ids ~ ") and rewrite.ev_class <> dep.refobjid
            union
            select rewrite.ev_class, readers.depth + 1
            from readers
            inner join pg_depend as dep on dep.refobjid = readers.oid and dep.refclassid = 'pg_class'::regclass
            inner join pg_rewrite as rewrite on dep.objid = rewrite.oid and dep.classid = 'pg_rewrite'::regclass
            where rewrite.ev_class <> readers.oid
        )
        select view.oid, namespace.nspname as schema_name, view.relname as view_name, view.relkind,
            pg_get_viewdef(view.oid) as definition, view.reloptions, pg_get_userbyid(view.relowner) as owner,
            view.relacl, obj_description(view.oid, 'pg_class') as comment, readers.depth
        from (select oid, max(depth) as depth from readers group by oid) as readers
        inner join pg_class as view on view.oid = readers.oid
        inner join pg_namespace as namespace on namespace.oid = view.relnamespace
        where not (namespace.nspname = '" ~ target.schema ~ "' and view.relname in (" ~ own ~ "))",
        "select set_config('search_path', value, true) from pg_temp.outreach_search_path",
        "create temporary table outreach_kept_grants on commit drop as
        select schema_name, view_name as relation_name, relacl from pg_temp.outreach_kept_views where relacl is not null
        union all
        select namespace.nspname, class.relname, class.relacl
        from pg_class as class inner join pg_namespace as namespace on namespace.oid = class.relnamespace
        where class.oid in (" ~ ids ~ ") and class.relacl is not null",
    ]) }}
{% endmacro %}

{#- Statements, after the swap's renames: what `save_additions_sql(relations, ...)` saved, again on the new
    relations. -#}
{% macro restore_additions_sql(relations) %}
    {{ return(adapter.dispatch('restore_additions_sql', 'outreach')(relations)) }}
{% endmacro %}
{% macro default__restore_additions_sql(relations) %}{{ return([]) }}{% endmacro %}
{% macro postgres__restore_additions_sql(relations) %}
    {%- if not relations -%}{{ return([]) }}{%- endif -%}
    {{ return(["do $outreach$
declare
    saved record;
    granted record;
    made text;
begin
    for saved in select * from pg_temp.outreach_kept_views order by depth, schema_name, view_name loop
        made := format('%I.%I', saved.schema_name, saved.view_name);
        begin
            execute format('create %s %s%s as %s',
                case saved.relkind when 'm' then 'materialized view' else 'view' end, made,
                coalesce(' with (' || array_to_string(saved.reloptions, ', ') || ')', ''),
                rtrim(saved.definition, '; '));
        exception when others then
            raise exception 'outreach: the view % reads what this build of the models no longer has (%): change or drop the view, then build again (the published tables and the view are as they were)',
                made, sqlerrm;
        end;
        if saved.comment is not null then
            execute format('comment on %s %s is %L',
                case saved.relkind when 'm' then 'materialized view' else 'view' end, made, saved.comment);
        end if;
    end loop;
    for granted in select format('%I.%I', kept.schema_name, kept.relation_name) as relation, acl.privilege_type,
            acl.is_grantable, case when acl.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(acl.grantee)) end
            as grantee
        from pg_temp.outreach_kept_grants as kept, aclexplode(kept.relacl) as acl loop
        execute format('grant %s on %s to %s%s', granted.privilege_type, granted.relation, granted.grantee,
            case when granted.is_grantable then ' with grant option' else '' end);
    end loop;
    -- last: a view given back to its owner is no longer the build's to grant on
    for saved in select * from pg_temp.outreach_kept_views where owner <> current_user loop
        begin  -- only a member of the owner's role may give it back; the grants keep the owner's access
            execute format('alter %s %I.%I owner to %I',
                case saved.relkind when 'm' then 'materialized view' else 'view' end, saved.schema_name,
                saved.view_name, saved.owner);
        exception when insufficient_privilege then
            null;
        end;
    end loop;
end
$outreach$"]) }}
{% endmacro %}

{#- The views that read each of `relations` (a removed model's relations the swap would drop), other than those
    relations themselves: {identifier: ['schema.view', ...]}. -#}
{% macro views_reading(relations) %}{{ return(adapter.dispatch('views_reading', 'outreach')(relations)) }}{% endmacro %}
{% macro default__views_reading(relations) %}{{ return({}) }}{% endmacro %}
{% macro postgres__views_reading(relations) %}
    {%- if not relations -%}{{ return({}) }}{%- endif -%}
    {%- set ids = _regclasses(relations) -%}
    {%- set rows = run_query("select distinct lower(read.relname), format('%s.%s', namespace.nspname, view.relname)
        from pg_depend as dep
        inner join pg_rewrite as rewrite on dep.objid = rewrite.oid
        inner join pg_class as read on read.oid = dep.refobjid
        inner join pg_class as view on view.oid = rewrite.ev_class
        inner join pg_namespace as namespace on namespace.oid = view.relnamespace
        where dep.classid = 'pg_rewrite'::regclass and dep.refclassid = 'pg_class'::regclass
            and dep.refobjid in (" ~ ids ~ ") and rewrite.ev_class not in (" ~ ids ~ ")
        order by 1, 2") -%}
    {%- set read_by = {} -%}
    {%- for row in rows.rows -%}
        {%- do read_by.setdefault(row[0], []).append(row[1]) -%}
    {%- endfor -%}
    {{ return(read_by) }}
{% endmacro %}

{#- `relations` as a list of PostgreSQL relation ids, for `in (...)`. -#}
{% macro _regclasses(relations) %}
    {%- set ids = [] -%}
    {%- for relation in relations -%}
        {%- do ids.append("'" ~ relation.include(database=false) ~ "'::regclass") -%}
    {%- endfor -%}
    {{ return(ids | join(', ')) }}
{% endmacro %}
