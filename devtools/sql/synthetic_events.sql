-- Webhook events for about a quarter of what the API shows (events only arrive once subscribed): one per
-- reply, first open, first click, bounce and unsubscribe, at the time the API records. A tenth of them
-- carry no workspace (a receiver secret not tied to one), as the receiver may store them.
create table outreach.events as
with picked as (
    select
        'lead.replied' as event, r.id as source_id, r.received_at as created_at, r.workspace_id, r.campaign_id,
        r."from" as email, r.reply_type, to_json({'reply_type': r.reply_type}) as data
    from outreach.replies r
    where hash(r.id) % 4 = 0
    union all
    select 'lead.opened', c.id, c.opened_at, c.workspace_id, c.campaign_id, c.email, null,
        to_json({'opened_at': c.opened_at})
    from outreach.campaign_recipients c where c.opened_at is not null and hash(c.id, 'open') % 4 = 0
    union all
    select 'lead.clicked', c.id, c.clicked_at, c.workspace_id, c.campaign_id, c.email, null,
        to_json({'clicked_at': c.clicked_at})
    from outreach.campaign_recipients c where c.clicked_at is not null and hash(c.id, 'click') % 4 = 0
    union all
    select 'lead.bounced', c.id, c.bounced_at, c.workspace_id, c.campaign_id, c.email, null,
        to_json({'bounced_at': c.bounced_at})
    from outreach.campaign_recipients c where c.bounced_at is not null and hash(c.id, 'bounce') % 4 = 0
    union all
    select 'lead.unsubscribed', c.id, c.last_sent_at + interval 3 hour, c.workspace_id, c.campaign_id, c.email, null,
        to_json({'unsubscribed_at': c.last_sent_at + interval 3 hour})
    from outreach.campaign_recipients c where c.status = 'unsubscribed' and hash(c.id, 'unsub') % 4 = 0
)
select
    fake_uuid('event' || event || source_id) as event_id,
    event,
    created_at,
    created_at + interval 1 second as received_at,
    case when hash(source_id, 'noworkspace') % 10 = 0 then null else workspace_id end as workspace_id,
    campaign_id,
    fake_uuid('lead' || email) as lead_id,
    email,
    reply_type,
    data,
    '1.1' as _dlt_load_id,
    fake_uuid('eventrow' || event || source_id) as _dlt_id
from picked;
