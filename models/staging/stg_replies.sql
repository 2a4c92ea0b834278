-- one row per reply the API still returns (raw: outreach.replies)
with contract as (
    select
        null::varchar as id,
        null::varchar as workspace_id,
        null::varchar as campaign_id,
        null::varchar as email_account_id,
        null::varchar as "from",
        null::varchar as subject,
        null::varchar as reply_type,
        null::boolean as is_read,
        null::varchar as body,
        null::timestamptz as received_at,
        null::timestamptz as body_fetched_at,
        null::timestamptz as deleted_at
    where false
),
source as (
    select * from contract
    union all by name
    select * from outreach.replies
),
renamed as (
    select
        id as reply_id,
        workspace_id,
        campaign_id,
        email_account_id,
        lower(trim("from")) as lead_email,
        subject,
        coalesce(nullif(trim(reply_type), ''), 'unclassified') as reply_type,
        reporting.is_positive_reply(reply_type) as is_positive,
        coalesce(is_read, false) as is_read,
        body is not null as has_body,
        received_at,
        body_fetched_at,
    from source
    where deleted_at is null
)
select * from renamed
