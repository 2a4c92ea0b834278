with source as (
    {{ typed_source('campaign_daily_sends') }}
),

renamed as (
    select
        campaign_id,
        workspace_id,
        "date" as send_date,
        coalesce(sent, 0) as count_sent
    from source
)

select * from renamed
