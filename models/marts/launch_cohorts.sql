-- Campaigns grouped by the ISO week they launched (first send, UTC), with reply and positive rates
-- 7, 14 and 28 days after each campaign's launch, over the campaigns old enough on the service's clock.
{%- set horizons = [7, 14, 28] %}
with campaigns as (
    select campaign_id, workspace_id, first_sent_at, count_contacted
    from {{ ref('campaign_performance') }}
    where first_sent_at is not null
),

clock as (
    select as_of_at from {{ ref('stg_service_clock') }}
),

recipients as (
    select campaign_id, replied_at from {{ ref('stg_campaign_recipients') }}
    where replied_at is not null
),

positive_replies as (
    -- each positive replier's first positive reply per campaign, among the campaign's replied recipients
    -- (as campaign_performance.count_positive_replies), so positive never exceeds replied
    select replies.campaign_id, replies.lead_email, min(replies.received_at) as first_positive_at
    from {{ ref('stg_replies') }} as replies
    inner join {{ ref('stg_campaign_recipients') }} as replied_recipients
        on replies.campaign_id = replied_recipients.campaign_id
        and replies.lead_email = replied_recipients.lead_email
        and replied_recipients.replied_at is not null
    where replies.is_positive and replies.received_at is not null
    group by replies.campaign_id, replies.lead_email
),

replied_by as (
    select
        recipients.campaign_id
        {%- for days in horizons %},
        count(case when recipients.replied_at <= {{ dbt.dateadd('day', days, 'campaigns.first_sent_at') }} then 1 end)
            as replied_{{ days }}d
        {%- endfor %}
    from recipients
    inner join campaigns on recipients.campaign_id = campaigns.campaign_id
    group by recipients.campaign_id
),

positive_by as (
    select
        positive_replies.campaign_id
        {%- for days in horizons %},
        count(case when positive_replies.first_positive_at <= {{ dbt.dateadd('day', days, 'campaigns.first_sent_at') }}
            then 1 end) as positive_{{ days }}d
        {%- endfor %}
    from positive_replies
    inner join campaigns on positive_replies.campaign_id = campaigns.campaign_id
    group by positive_replies.campaign_id
),

per_campaign as (
    select
        campaigns.campaign_id,
        campaigns.workspace_id,
        campaigns.first_sent_at,
        {{ iso_week_start(utc_date('campaigns.first_sent_at')) }} as launch_week,
        campaigns.count_contacted,
        clock.as_of_at
        {%- for days in horizons %},
        -- the campaign counts at this horizon once it has passed on the service's clock
        {{ dbt.dateadd('day', days, 'campaigns.first_sent_at') }} <= clock.as_of_at as is_mature_{{ days }}d,
        coalesce(replied_by.replied_{{ days }}d, 0) as replied_{{ days }}d,
        coalesce(positive_by.positive_{{ days }}d, 0) as positive_{{ days }}d
        {%- endfor %}
    from campaigns
    cross join clock
    left join replied_by on campaigns.campaign_id = replied_by.campaign_id
    left join positive_by on campaigns.campaign_id = positive_by.campaign_id
),

cohorts as (
    select
        launch_week,
        count(*) as count_campaigns,
        count(distinct workspace_id) as count_workspaces,
        cast(sum(count_contacted) as {{ dbt.type_bigint() }}) as count_contacted,
        min(first_sent_at) as first_launch_at,
        max(first_sent_at) as last_launch_at,
        max(as_of_at) as as_of_at
        {%- for days in horizons %},
        count(case when is_mature_{{ days }}d then 1 end) as count_campaigns_{{ days }}d,
        sum(case when is_mature_{{ days }}d then count_contacted end) as contacted_{{ days }}d,
        sum(case when is_mature_{{ days }}d then replied_{{ days }}d end) as replied_{{ days }}d,
        sum(case when is_mature_{{ days }}d then positive_{{ days }}d end) as positive_{{ days }}d
        {%- endfor %}
    from per_campaign
    group by launch_week
),

final as (
    select
        launch_week,
        {{ iso_year('launch_week') }} as iso_year,
        {{ iso_week('launch_week') }} as iso_week,
        count_campaigns,
        count_workspaces,
        count_contacted,
        first_launch_at,
        last_launch_at
        {%- for days in horizons %},
        count_campaigns_{{ days }}d,
        {{ ratio('replied_' ~ days ~ 'd', 'contacted_' ~ days ~ 'd') }} as reply_rate_{{ days }}d,
        {{ ratio('positive_' ~ days ~ 'd', 'contacted_' ~ days ~ 'd') }} as positive_reply_rate_{{ days }}d
        {%- endfor %},
        as_of_at
    from cohorts
)

select * from final
order by launch_week
