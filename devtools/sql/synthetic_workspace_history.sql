-- `workspaces` as scd2: one version a day over the last 20 days (06:00 UTC), the balance down by the
-- workspace's sends of the day before it and 1,000 credits added on the 10th day.
create or replace table outreach.workspaces as
with sends as (
    select workspace_id, date, sum(sent) as sent from outreach.campaign_daily_sends group by all
),
versions as (
    select
        w.*,
        v,
        (getvariable('now')::timestamptz - to_days((20 - v)::int))::date as day
    from outreach.workspaces w, range(20) t(v)
)
select
    versions.* exclude (v, day, credits__balance, _dlt_id),
    (versions.credits__balance + 40000 + case when v >= 10 then 1000 else 0 end - coalesce((
        select sum(sends.sent) from sends where sends.workspace_id = versions.id and sends.date < versions.day
    ), 0))::bigint as credits__balance,
    (versions.day + interval 6 hour)::timestamptz as observed_at,
    (versions.day + interval 6 hour)::timestamptz as _dlt_valid_from,
    case when v < 19 then (versions.day + interval 30 hour)::timestamptz end as _dlt_valid_to,
    fake_uuid('wsrow' || versions.id || v) as _dlt_id
from versions;
