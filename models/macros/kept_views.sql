{#-
    Views that read the published relations, kept across the swap on PostgreSQL. There a view is bound to the
    relations it reads by their ids, not their names, so the swap's `drop ... cascade` of a mart's old table
    dropped with it every view that read it, in any schema: an analyst's view of a mart, and the views over that
    view, were gone after every build. The swap now saves their definitions first (`pg_get_viewdef`, read with
    only pg_catalog on the search path, so every other name in them is schema-qualified), and creates them again
    over the new relations in the same transaction, in dependency order, with their options, grants, comment and
    (where the build's role may give it) owner. A view that cannot be made again (it reads a column the new build no longer has) fails the swap,
    naming the view: the published relations, that view included, stay as they were.

    DuckDB binds a view to names when it is read: its views need nothing.
-#}

{#- Statements, after the swap's `begin` and before its drops: save the views that read `relations` (the published
    relations the swap drops), leaving out the relations named `own_names` in the target schema (what the swap
    replaces itself). -#}
{% macro save_dependent_views_sql(relations, own_names) %}
    {{ return(adapter.dispatch('save_dependent_views_sql', 'outreach')(relations, own_names)) }}
{% endmacro %}
{% macro default__save_dependent_views_sql(relations, own_names) %}{{ return([]) }}{% endmacro %}
{% macro postgres__save_dependent_views_sql(relations, own_names) %}
    {%- if not relations -%}{{ return([]) }}{%- endif -%}
    {%- set ids = [] -%}
    {%- for relation in relations -%}
        {%- do ids.append("'" ~ relation.include(database=false) ~ "'::regclass") -%}
    {%- endfor -%}
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
                and dep.refobjid in (" ~ ids | join(', ') ~ ") and rewrite.ev_class <> dep.refobjid
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
    ]) }}
{% endmacro %}

{#- Statements, after the swap's renames: the views `save_dependent_views_sql(relations, ...)` saved, again over the
    new relations. -#}
{% macro restore_dependent_views_sql(relations) %}
    {{ return(adapter.dispatch('restore_dependent_views_sql', 'outreach')(relations)) }}
{% endmacro %}
{% macro default__restore_dependent_views_sql(relations) %}{{ return([]) }}{% endmacro %}
{% macro postgres__restore_dependent_views_sql(relations) %}
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
        for granted in select acl.privilege_type, acl.is_grantable,
                case when acl.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(acl.grantee)) end as grantee
            from aclexplode(saved.relacl) as acl loop
            execute format('grant %s on %s to %s%s', granted.privilege_type, made, granted.grantee,
                case when granted.is_grantable then ' with grant option' else '' end);
        end loop;
        if saved.owner <> current_user then
            begin  -- only a member of the owner's role may give it back; its grants above keep its access
                execute format('alter %s %s owner to %I',
                    case saved.relkind when 'm' then 'materialized view' else 'view' end, made, saved.owner);
            exception when insufficient_privilege then
                null;
            end;
        end if;
    end loop;
end
$outreach$"]) }}
{% endmacro %}
