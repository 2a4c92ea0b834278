with source as (
    {{ typed_source('campaign_recipients') }}
),

renamed as (
    select
        id as recipient_id,
        workspace_id,
        campaign_id,
        {{ lead_email('email') }} as lead_email,
        first_name,
        last_name,
        company,
        status as recipient_status,
        coalesce(current_step, 0) as current_step,
        last_sent_at,
        opened_at,
        clicked_at,
        replied_at,
        bounced_at
    from source
    where deleted_at is null
)

select * from renamed
