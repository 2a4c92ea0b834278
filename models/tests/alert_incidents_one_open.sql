-- No two open incidents share a rule and a subject (alerts/store.py writes reporting.alert_incidents after
-- each build; the table does not exist before the first evaluation, and then there is nothing to check).
{%- set incidents = adapter.get_relation(database=target.database, schema=target.schema, identifier='alert_incidents') %}
{%- if incidents is none %}
select null as rule, null as subject_id, 0 as open_rows where false
{%- else %}
select rule, subject_id, count(*) as open_rows
from {{ incidents }}
where state = 'open'
group by rule, subject_id
having count(*) > 1
{%- endif %}
