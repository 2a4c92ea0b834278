-- at most one winning variant per campaign, and only with a significant p-value
select campaign_id, count(*) filter (where is_winner) as winners,
    count(*) filter (where is_winner and not (p_value < 0.05)) as unsupported_winners
from reporting.variant_performance
group by campaign_id
having count(*) filter (where is_winner) > 1 or count(*) filter (where is_winner and not (p_value < 0.05)) > 0
