with source as (
    {{ typed_source('campaign_variants') }}
),

renamed as (
    select
        campaign_id,
        workspace_id,
        "index" as variant_index,
        subject,
        coalesce(sent, 0) as count_sent,
        coalesce(replied, 0) as count_replied,
        reply_rate as api_reply_rate
    from source
    where deleted_at is null
)

select * from renamed
