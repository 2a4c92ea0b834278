-- Workspaces.
create table outreach.workspaces as
select
    fake_uuid('ws' || w) as id,
    fake_uuid('ws' || w) as workspace_id,
    'Workspace ' || (w + 1) as name,
    getvariable('now')::timestamptz - interval 400 day as created_at,
    case when w % 2 = 0 then 'growth' else 'starter' end as plan,
    (5000 - 700 * w)::bigint as credits__balance,
    0::bigint as counts__campaigns,
    getvariable('n_mb')::bigint as counts__email_accounts,
    (3 + w)::bigint as counts__lists,
    getvariable('now')::timestamptz as synced_at,
    '1.1' as _dlt_load_id,
    fake_uuid('wsrow' || w) as _dlt_id
from range(getvariable('n_ws')) t(w);

-- Campaign attributes (a helper, dropped at the end).
create temp table camp as
select
    c,
    fake_uuid('camp' || c) as id,
    fake_uuid('ws' || (c % getvariable('n_ws'))) as workspace_id,
    case c % 10 when 0 then 'draft' when 1 then 'paused' when 2 then 'completed' else 'active' end as status,
    1 + rnd(c, 'variants') % 3 as n_variants,
    rnd(c, 'followups') % 4 as max_follow_ups,
    getvariable('now')::timestamptz - to_days((20 + c % 40)::int) as created_at
from range(getvariable('n_camp')) t(c);

-- Recipients: one row per (campaign, lead); interleaved so every campaign gets a share.
create table outreach.campaign_recipients as
with base as (
    select
        r.i,
        r.i % getvariable('n_leads') as lead,
        camp.*,
        rnd(r.i, 'status') as u,
        rnd(r.i, 'variant') % camp.n_variants as variant
    from range(getvariable('n_rec')) r(i)
    join camp on camp.c = r.i % getvariable('n_camp')
),
statused as (
    select
        *,
        case
            when status = 'draft' or u < 100 then 'pending'
            when u < 250 then 'active'
            when u < 550 then 'sent'
            when u < 650 + (case when variant = 1 and c % 3 = 0 then 80 else 0 end) then 'replied'
            when u < 730 + (case when variant = 1 and c % 3 = 0 then 80 else 0 end)
                then case when u % 8 < 5 then 'bounced' else 'unsubscribed' end
            else 'completed'
        end as rstatus
    from base
),
stepped as (
    select
        *,
        case
            when rstatus = 'pending' then 0
            when rstatus = 'bounced' then 1
            else 1 + rnd(i, 'step') % (1 + max_follow_ups)
        end as step,
        created_at + to_days((1 + rnd(i, 'sentday') % 18)::int)
            + to_minutes((rnd(i, 'sentmin') * 0.9)::int) as sent_ts
    from statused
)
select
    fake_uuid('rec' || i) as id,
    workspace_id,
    id as campaign_id,
    'lead' || lead || '@company' || (lead % 997) || '.example' as email,
    (['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken'])[1 + lead % 8] as first_name,
    'Person' || lead as last_name,
    'Company ' || (lead % 997) as company,
    rstatus as status,
    step::bigint as current_step,
    case when step > 0 then sent_ts end as last_sent_at,
    case when step > 0 and rstatus <> 'bounced' and (rstatus = 'replied' or rnd(i, 'open') < 450)
        then sent_ts + to_minutes((5 + rnd(i, 'openmin'))::int) end as opened_at,
    case when step > 0 and rstatus <> 'bounced' and (rstatus = 'replied' or rnd(i, 'open') < 450)
        and rnd(i, 'click') < 200 then sent_ts + to_minutes((10 + rnd(i, 'openmin'))::int) end as clicked_at,
    case when rstatus = 'replied' then sent_ts + to_minutes((30 + rnd(i, 'replymin') * 3)::int) end as replied_at,
    case when rstatus = 'bounced' then sent_ts + interval 2 minute end as bounced_at,
    getvariable('now')::timestamptz as synced_at,
    case when rnd(i, 'deleted') < 2 then getvariable('now')::timestamptz - interval 1 day end as deleted_at,
    variant as _variant,
    '1.1' as _dlt_load_id,
    fake_uuid('recrow' || i) as _dlt_id
from stepped;

-- Per-variant and per-campaign totals over the recipients the API still returns.
create temp table variant_totals as
select
    campaign_id,
    _variant as variant,
    sum(current_step)::bigint as sent,
    count(*) filter (where status = 'replied')::bigint as replied
from outreach.campaign_recipients
where deleted_at is null
group by all;

create temp table camp_totals as
select
    camp.id as campaign_id,
    count(r.id)::bigint as recipients,
    coalesce(sum(r.current_step), 0)::bigint as sent,
    count(*) filter (where r.status = 'bounced')::bigint as bounced,
    count(r.opened_at)::bigint as opened,
    count(r.clicked_at)::bigint as clicked,
    count(*) filter (where r.status = 'replied')::bigint as replied,
    count(*) filter (where r.status = 'unsubscribed')::bigint as unsubscribed,
    count(*) filter (where r.status = 'pending')::bigint as pending
from camp
left join outreach.campaign_recipients r on r.campaign_id = camp.id and r.deleted_at is null
group by camp.id;

alter table outreach.campaign_recipients drop column _variant;

-- Campaigns, scd2: a draft version from creation, then the current version; plus one
-- campaign per workspace that the API no longer returns (history only).
create table outreach.campaigns as
with current_rows as (
    select
        camp.id,
        camp.workspace_id,
        'Campaign ' || (camp.c + 1) as name,
        camp.status,
        'outbound' as campaign_type,
        case when camp.c % 4 = 0 then 'scheduled' else 'immediate' end as schedule_type,
        case when camp.c % 4 = 0 then camp.created_at + interval 1 day end as scheduled_at,
        to_json(list_transform(range(camp.n_variants), lambda k: 'Subject ' || k || ' of campaign ' || camp.c))
            as subject_lines,
        to_json(list_transform(range(camp.n_variants), lambda k: 'Hi {{first_name|there}}, body ' || k))
            as email_bodies,
        '09:00' as send_window__start,
        '17:00' as send_window__end,
        to_json(['mon', 'tue', 'wed', 'thu', 'fri']) as send_window__days,
        (['Europe/Berlin', 'America/New_York', 'Asia/Tokyo'])[1 + camp.c % 3] as send_window__timezone,
        camp.max_follow_ups > 0 as follow_up__enabled,
        3::bigint as follow_up__delay_days,
        camp.max_follow_ups::bigint as follow_up__max,
        true as stop_on_reply,
        t.recipients as stats__total_leads,
        t.sent as stats__sent,
        t.opened as stats__opened,
        t.clicked as stats__clicked,
        t.replied as stats__replied,
        t.bounced as stats__bounced,
        camp.created_at,
        camp.created_at + interval 1 day as _dlt_valid_from,
        null::timestamptz as _dlt_valid_to
    from camp join camp_totals t on t.campaign_id = camp.id
),
draft_rows as (
    select * replace (
        'draft' as status,
        0::bigint as stats__sent, 0::bigint as stats__opened, 0::bigint as stats__clicked,
        0::bigint as stats__replied, 0::bigint as stats__bounced,
        created_at as _dlt_valid_from,
        created_at + interval 1 day as _dlt_valid_to
    )
    from current_rows
    where status <> 'draft'
),
gone_rows as (
    select * replace (
        fake_uuid('gone' || workspace_id) as id,
        'Removed campaign' as name,
        'completed' as status,
        _dlt_valid_from - interval 30 day as _dlt_valid_from,
        _dlt_valid_from - interval 2 day as _dlt_valid_to
    )
    from current_rows
    qualify row_number() over (partition by workspace_id order by id) = 1
),
all_rows as (
    select * from current_rows
    union all select * from draft_rows
    union all select * from gone_rows
)
select *, '1.1' as _dlt_load_id, fake_uuid('camprow' || id || _dlt_valid_from) as _dlt_id
from all_rows;

-- Stats for every current campaign except the first draft (exercises the running-totals fallback).
create table outreach.campaign_stats as
select
    camp.id as campaign_id,
    camp.workspace_id,
    'Campaign ' || (camp.c + 1) as campaign_name,
    camp.status as campaign_status,
    t.recipients as totals__recipients,
    t.sent as totals__sent,
    t.sent - t.bounced as totals__delivered,
    t.opened as totals__opened,
    t.clicked as totals__clicked,
    t.replied as totals__replied,
    t.bounced as totals__bounced,
    t.unsubscribed as totals__unsubscribed,
    t.pending as totals__pending,
    0::bigint as totals__failed,
    -- rates as the service computes them: over contacted recipients, rounded half to even (Python's round)
    coalesce(round_even(100.0 * t.opened / nullif(t.recipients - t.pending, 0), 2), 0) as rates__open,
    coalesce(round_even(100.0 * t.clicked / nullif(t.recipients - t.pending, 0), 2), 0) as rates__click,
    coalesce(round_even(100.0 * t.replied / nullif(t.recipients - t.pending, 0), 2), 0) as rates__reply,
    coalesce(round_even(100.0 * t.bounced / nullif(t.recipients - t.pending, 0), 2), 0) as rates__bounce,
    coalesce(round_even(100.0 * t.unsubscribed / nullif(t.recipients - t.pending, 0), 2), 0) as rates__unsubscribe,
    coalesce(round_even(100.0 * (t.recipients - t.pending) / nullif(t.recipients, 0), 2), 0) as rates__progress,
    getvariable('now')::timestamptz as synced_at,
    null::timestamptz as deleted_at,
    '1.1' as _dlt_load_id,
    fake_uuid('statrow' || camp.id) as _dlt_id
from camp join camp_totals t on t.campaign_id = camp.id
where camp.c <> 0;

create table outreach.campaign_variants as
select
    camp.id as campaign_id,
    camp.workspace_id,
    k::bigint as "index",
    'Subject ' || k || ' of campaign ' || camp.c as subject,
    coalesce(v.sent, 0)::bigint as sent,
    coalesce(v.replied, 0)::bigint as replied,
    round(100.0 * coalesce(v.replied, 0) / nullif(v.sent, 0), 2) as reply_rate,
    getvariable('now')::timestamptz as synced_at,
    null::timestamptz as deleted_at,
    '1.1' as _dlt_load_id,
    fake_uuid('varrow' || camp.id || k) as _dlt_id
from camp
cross join lateral (select unnest(range(camp.n_variants)) as k) ks
left join variant_totals v on v.campaign_id = camp.id and v.variant = ks.k;

-- Daily sends: the messages of each recipient on the day of its last send, accumulated over weeks.
create table outreach.campaign_daily_sends as
select
    campaign_id,
    any_value(workspace_id) as workspace_id,
    (last_sent_at at time zone 'UTC')::date as date,
    sum(current_step)::bigint as sent,
    getvariable('now')::timestamptz as synced_at,
    '1.1' as _dlt_load_id,
    fake_uuid('dayrow' || campaign_id || (last_sent_at at time zone 'UTC')::date) as _dlt_id
from outreach.campaign_recipients
where last_sent_at is not null
group by campaign_id, (last_sent_at at time zone 'UTC')::date;

-- Mailboxes, scd2: four daily versions each; the last mailbox of each workspace is paused.
create temp table mailbox as
select
    w * getvariable('n_mb') + m as mb,
    w,
    m,
    fake_uuid('mb' || w || '-' || m) as id,
    fake_uuid('ws' || w) as workspace_id
from range(getvariable('n_ws')) a(w), range(getvariable('n_mb')) b(m);

create table outreach.email_accounts as
select
    mailbox.id,
    mailbox.workspace_id,
    'sender' || mailbox.m || '@ws' || mailbox.w || '.example' as email,
    'Sender ' || mailbox.m as display_name,
    (['google', 'microsoft', 'smtp'])[1 + mailbox.m % 3] as provider,
    not (mailbox.m = getvariable('n_mb') - 1 and v = 3) as is_active,
    (40 + 20 * (mailbox.m % 3))::bigint as daily_send_limit,
    ((rnd(mailbox.mb * 10 + v, 'senttoday') % 40))::bigint as sent_today,
    round(70 + mailbox.m * 3 + (case when mailbox.m % 2 = 0 then 2 else -2 end) * v, 1)::double
        as reputation_score,
    true as warmup__enabled,
    round(60 + 5 * v + mailbox.m, 1)::double as warmup__health_score,
    getvariable('now')::timestamptz - interval 90 day as created_at,
    getvariable('now')::timestamptz - to_days((3 - v)::int) - interval 6 hour as _dlt_valid_from,
    case when v < 3 then getvariable('now')::timestamptz - to_days((2 - v)::int) - interval 6 hour end
        as _dlt_valid_to,
    '1.1' as _dlt_load_id,
    fake_uuid('mbrow' || mailbox.id || v) as _dlt_id
from mailbox, range(4) t(v);

-- Replies: one per recipient who replied, a second for some, from the campaign's workspace mailboxes.
create table outreach.replies as
with replied as (
    select
        r.*,
        row_number() over () as n,
        (hash(r.id, getvariable('seed')) % 1000000007)::bigint as h
    from outreach.campaign_recipients r
    where r.status = 'replied'
),
messages as (
    select *, 0 as k, replied_at as received from replied
    union all
    select *, 1 as k, replied_at + interval 1 day as received from replied where h % 10 = 0
)
select
    fake_uuid('reply' || m.id || m.k) as id,
    m.workspace_id,
    m.campaign_id,
    mailbox.id as email_account_id,
    m.email as "from",
    case when m.k = 0 then 'Re: your note' else 'Re: Re: your note' end as subject,
    'Thanks for reaching out' as snippet,
    (getvariable('reply_types'))[(1 + ((m.h // 7 + m.k) % len(getvariable('reply_types'))))::bigint] as reply_type,
    m.h % 3 = 0 as is_read,
    m.received as received_at,
    case when m.h % 10 < 7 then 'Full reply text ' || m.n end as body,
    case when m.h % 10 < 7 then getvariable('now')::timestamptz end as body_fetched_at,
    getvariable('now')::timestamptz as synced_at,
    case when m.h % 500 = 1 then getvariable('now')::timestamptz end as deleted_at,
    '1.1' as _dlt_load_id,
    fake_uuid('replyrow' || m.id || m.k) as _dlt_id
from messages m
join mailbox on mailbox.workspace_id = m.workspace_id and mailbox.m = m.h % getvariable('n_mb');

create table outreach.webhook_event_types (
    key varchar, label varchar, workspace_id varchar, _dlt_load_id varchar, _dlt_id varchar
);

update outreach.workspaces w set counts__campaigns = (
    select count(*) from camp where camp.workspace_id = w.id
);

drop table camp; drop table camp_totals; drop table variant_totals; drop table mailbox;
