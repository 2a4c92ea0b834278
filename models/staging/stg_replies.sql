with source as (
    {{ typed_source('replies') }}
),

renamed as (
    select
        id as reply_id,
        workspace_id,
        campaign_id,
        email_account_id,
        {{ lead_email('"from"') }} as lead_email,
        subject,
        coalesce(nullif(trim(reply_type), ''), 'unclassified') as reply_type,
        {{ reply_class('reply_type') }} as reply_class,
        {{ is_positive_reply('reply_type') }} as is_positive,
        coalesce(is_read, false) as is_read,
        body is not null as has_body,
        received_at,
        body_fetched_at
    from source
    where deleted_at is null
)

select * from renamed
