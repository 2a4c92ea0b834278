-- Per workspace, weekday and hour of the send in the campaign's time zone: recipients sent to then, and
-- of them who opened, replied and replied as a person. An approximation, and why: the API keeps one send
-- time per recipient (last_sent_at, its latest message) and no per-message send log. For a recipient who
-- replied in a campaign that stops on reply, the latest message is the one the reply answered, so
-- repliers are bucketed exactly; a recipient who never replied is bucketed by the last follow-up, not by
-- every message they got. Each contacted recipient counts once; rates are fractions of those recipients.
with campaigns as (
    select
        campaigns.campaign_id,
        campaigns.workspace_id,
        -- a zone the engine does not know (the test known_timezone warns naming it) or none: UTC
        coalesce(zones.name, 'UTC') as send_timezone
    from {{ ref('stg_campaigns') }} as campaigns
    left join {{ timezone_names() }} as zones
        on campaigns.send_timezone = zones.name
),

recipients as (
    select campaign_id, lead_email, last_sent_at, opened_at, replied_at
    from {{ ref('stg_campaign_recipients') }}
    where current_step > 0 and last_sent_at is not null
),

human_repliers as (
    select distinct campaign_id, lead_email
    from {{ ref('stg_replies') }}
    where {{ is_human_reply_class('reply_class') }}
),

localized as (
    select
        campaigns.workspace_id,
        {{ local_time('recipients.last_sent_at', 'campaigns.send_timezone') }} as local_sent_at,
        case when recipients.opened_at is not null then 1 else 0 end as opened,
        case when recipients.replied_at is not null then 1 else 0 end as replied,
        case when human_repliers.lead_email is not null then 1 else 0 end as human_replied
    from recipients
    inner join campaigns on recipients.campaign_id = campaigns.campaign_id
    left join human_repliers
        on recipients.campaign_id = human_repliers.campaign_id
        and recipients.lead_email = human_repliers.lead_email
),

slots as (
    select
        workspace_id,
        cast(extract(isodow from local_sent_at) as {{ dbt.type_bigint() }}) as weekday,
        cast(extract(hour from local_sent_at) as {{ dbt.type_bigint() }}) as hour,
        count(*) as sends,
        sum(opened) as opens,
        sum(replied) as replies,
        sum(human_replied) as human_replies
    from localized
    group by 1, 2, 3
),

final as (
    select
        workspace_id,
        weekday,
        hour,
        cast(sends as {{ dbt.type_bigint() }}) as sends,
        cast(opens as {{ dbt.type_bigint() }}) as opens,
        cast(replies as {{ dbt.type_bigint() }}) as replies,
        cast(human_replies as {{ dbt.type_bigint() }}) as human_replies,
        {{ ratio('opens', 'sends') }} as open_rate,
        {{ ratio('replies', 'sends') }} as reply_rate,
        {{ ratio('human_replies', 'sends') }} as human_reply_rate
    from slots
)

select * from final
order by workspace_id, weekday, hour
