-- the variants' sent adds up to the campaign's sent (for campaigns with variant rows)
with variants as (
    select campaign_id, sum(count_sent) as variant_sent
    from reporting.variant_performance
    group by campaign_id
)
select p.campaign_id, p.count_sent, v.variant_sent
from reporting.campaign_performance p
join variants v using (campaign_id)
where p.has_api_stats and p.count_sent <> v.variant_sent
