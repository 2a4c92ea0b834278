-- Per workspace and recipient company domain (the part of the address after '@'): contacts, campaigns
-- that reached them, replies, and a flag for domains several campaigns reached in the last 30 days on the
-- service's clock (stg_service_clock), so teams stop contacting one account from many campaigns.
with campaigns as (
    select campaign_id from {{ ref('stg_campaigns') }}
),

clock as (
    select as_of_at, {{ dbt.dateadd('day', -30, 'as_of_at') }} as window_start_at
    from {{ ref('stg_service_clock') }}
),

recipients as (
    select
        recipients.workspace_id,
        coalesce({{ email_domain('recipients.lead_email') }}, '(none)') as company_domain,
        recipients.campaign_id,
        recipients.current_step,
        recipients.last_sent_at
    from {{ ref('stg_campaign_recipients') }} as recipients
    inner join campaigns on recipients.campaign_id = campaigns.campaign_id
),

replies as (
    select
        workspace_id,
        coalesce({{ email_domain('lead_email') }}, '(none)') as company_domain,
        lead_email,
        is_positive,
        received_at
    from {{ ref('stg_replies') }}
),

per_campaign as (
    select
        recipients.workspace_id,
        recipients.company_domain,
        recipients.campaign_id,
        max(case when recipients.current_step > 0 then 1 else 0 end) as is_reached,
        max(case
            when recipients.current_step > 0
                and recipients.last_sent_at > clock.window_start_at
                and recipients.last_sent_at <= clock.as_of_at
            then 1 else 0
        end) as is_recent
    from recipients
    cross join clock
    group by recipients.workspace_id, recipients.company_domain, recipients.campaign_id
),

contact_facts as (
    -- per address: lead_engagement is one row per address over the same recipients (current campaigns),
    -- already aggregated, so the per-address step is not paid twice over every recipient
    select
        workspace_id,
        coalesce({{ email_domain('lead_email') }}, '(none)') as company_domain,
        count(*) as count_contacts,
        count(case when count_campaigns_contacted > 0 then 1 end) as count_contacts_reached,
        max(last_contacted_at) as last_touched_at
    from {{ ref('lead_engagement') }}
    group by 1, 2
),

campaign_facts as (
    select
        workspace_id,
        company_domain,
        sum(is_reached) as count_campaigns_reached,
        sum(is_recent) as count_campaigns_last_30d
    from per_campaign
    group by workspace_id, company_domain
),

recipient_facts as (
    select
        contact_facts.workspace_id,
        contact_facts.company_domain,
        contact_facts.count_contacts,
        contact_facts.count_contacts_reached,
        cast(campaign_facts.count_campaigns_reached as {{ dbt.type_bigint() }}) as count_campaigns_reached,
        cast(campaign_facts.count_campaigns_last_30d as {{ dbt.type_bigint() }}) as count_campaigns_last_30d,
        contact_facts.last_touched_at
    from contact_facts
    inner join campaign_facts
        on contact_facts.workspace_id = campaign_facts.workspace_id
        and contact_facts.company_domain = campaign_facts.company_domain
),

reply_facts as (
    select
        workspace_id,
        company_domain,
        count(*) as count_replies,
        count(case when is_positive then 1 end) as count_positive_replies,
        count(distinct lead_email) as count_contacts_replied,
        max(received_at) as last_reply_at
    from replies
    group by workspace_id, company_domain
),

joined as (
    -- every domain with a recipient or a reply: a reply from an address no campaign holds is kept
    select
        coalesce(recipient_facts.workspace_id, reply_facts.workspace_id) as workspace_id,
        coalesce(recipient_facts.company_domain, reply_facts.company_domain) as company_domain,
        coalesce(recipient_facts.count_contacts, 0) as count_contacts,
        coalesce(recipient_facts.count_contacts_reached, 0) as count_contacts_reached,
        coalesce(recipient_facts.count_campaigns_reached, 0) as count_campaigns_reached,
        coalesce(recipient_facts.count_campaigns_last_30d, 0) as count_campaigns_last_30d,
        recipient_facts.last_touched_at,
        coalesce(reply_facts.count_replies, 0) as count_replies,
        coalesce(reply_facts.count_positive_replies, 0) as count_positive_replies,
        coalesce(reply_facts.count_contacts_replied, 0) as count_contacts_replied,
        reply_facts.last_reply_at
    from recipient_facts
    full outer join reply_facts
        on recipient_facts.workspace_id = reply_facts.workspace_id
        and recipient_facts.company_domain = reply_facts.company_domain
),

final as (
    select
        joined.workspace_id,
        joined.company_domain,
        joined.count_contacts,
        joined.count_contacts_reached,
        joined.count_campaigns_reached,
        joined.count_campaigns_last_30d,
        -- a free-mail domain is many unrelated people, not one company: never an over-contacted company
        joined.count_campaigns_last_30d > 1 and not {{ free_mail('joined.company_domain') }} as is_multi_campaign_30d,
        {{ free_mail('joined.company_domain') }} as is_free_mail_domain,
        joined.last_touched_at,
        joined.count_replies,
        joined.count_positive_replies,
        joined.count_contacts_replied,
        joined.last_reply_at,
        clock.as_of_at
    from joined
    cross join clock
)

select * from final
order by workspace_id, company_domain
