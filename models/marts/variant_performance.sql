-- Per campaign and subject variant: the API's messages sent and replied recipients, and the A/B test per
-- estimated recipient (models/ab_test.py computes it with statsmodels before dbt runs; the data tests
-- single_winner and ab_test_honest check its invariants here).
with campaigns as (
    select campaign_id from {{ ref('stg_campaigns') }}
),

variants as (
    select variants.*
    from {{ ref('stg_campaign_variants') }} as variants
    inner join campaigns on variants.campaign_id = campaigns.campaign_id
),

tests as (
    select * from {{ ref('stg_variant_tests') }}
),

final as (
    select
        variants.campaign_id,
        variants.workspace_id,
        variants.variant_index,
        variants.subject,
        count(*) over (partition by variants.campaign_id) as count_variants_in_campaign,
        variants.count_sent,
        variants.count_replied,
        tests.estimated_recipients,
        tests.reply_rate,
        tests.reply_rate_ci_low,
        tests.reply_rate_ci_high,
        {{ ratio('variants.count_replied', 'variants.count_sent') }} as reply_rate_per_sent_message,
        tests.compared_variant_index,
        {{ round_to('tests.z_score', 4) }} as z_score,
        tests.p_value,
        tests.adjusted_p_value,
        coalesce(tests.adjusted_p_value < 0.05, false) as is_significant,
        coalesce(tests.is_winner, false) as is_winner,
        coalesce(tests.test_state, case when count(*) over (partition by variants.campaign_id) > 1
            then 'no winner yet' else 'single variant' end) as test_state,
        tests.recipients_needed
    from variants
    left join tests
        on variants.campaign_id = tests.campaign_id
        and variants.variant_index = tests.variant_index
)

select * from final
order by workspace_id, campaign_id, variant_index
