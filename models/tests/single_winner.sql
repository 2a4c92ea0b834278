-- At most one winning variant per campaign, and only with p < 0.05 (rows = campaigns breaking it).
select
    campaign_id,
    count(case when is_winner then 1 end) as winners,
    count(case when is_winner and not (p_value < 0.05) then 1 end) as unsupported_winners
from {{ ref('variant_performance') }}
group by campaign_id
having count(case when is_winner then 1 end) > 1
    or count(case when is_winner and not (p_value < 0.05) then 1 end) > 0
