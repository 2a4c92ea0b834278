with source as (
    {{ typed_source('webhook_event_types') }}
),

renamed as (
    select
        workspace_id,
        "key" as event_key,
        label as event_label
    from source
)

select * from renamed
