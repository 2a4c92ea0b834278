-- The A/B test is honest (rows = campaigns breaking it): at most one winner; a winner only when every arm
-- has at least 100 estimated recipients and the Holm-adjusted p-value is below 0.05; an adjusted p-value
-- is never below the raw one.
with arms as (
    select
        campaign_id,
        count(case when is_winner then 1 end) as winners,
        count(case when is_winner and not (adjusted_p_value < 0.05) then 1 end) as unsupported_winners,
        min(coalesce(estimated_recipients, 0)) as smallest_arm,
        count(case when adjusted_p_value < p_value - 1e-12 then 1 end) as adjusted_below_raw
    from {{ ref('variant_performance') }}
    group by campaign_id
)

select * from arms
where winners > 1
    or unsupported_winners > 0
    or (winners > 0 and smallest_arm < 100)
    or adjusted_below_raw > 0
