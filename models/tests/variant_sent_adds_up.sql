-- Per campaign with API stats and variants, the variants' sent adds up to the API's totals.sent
-- (rows = campaigns where it does not).
with variants as (
    select campaign_id, sum(count_sent) as variant_sent
    from {{ ref('variant_performance') }}
    group by campaign_id
)

select
    performance.campaign_id,
    performance.count_sent,
    variants.variant_sent
from {{ ref('campaign_performance') }} as performance
inner join variants on performance.campaign_id = variants.campaign_id
where performance.has_api_stats
    and performance.count_sent <> variants.variant_sent
