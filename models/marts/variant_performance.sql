-- one row per campaign and subject variant, tested against the campaign's best other variant
with campaigns as (
    select campaign_id from reporting.stg_campaigns
),
variants as (
    select v.*
    from reporting.stg_campaign_variants v
    join campaigns using (campaign_id)
),
rated as (
    select
        *,
        count_replied / nullif(count_sent, 0)::double as reply_share,
        count(*) over (partition by campaign_id) as count_variants_in_campaign,
    from variants
),
best_other as (
    -- for each variant, the other variant of the campaign with the highest reply rate
    -- (ties: more sends, then the lower index)
    select
        v.campaign_id,
        v.variant_index,
        arg_max(
            {'variant_index': o.variant_index, 'count_sent': o.count_sent, 'count_replied': o.count_replied},
            [coalesce(o.reply_share, -1), o.count_sent::double, -o.variant_index::double]
        ) as other,
    from rated v
    join rated o on o.campaign_id = v.campaign_id and o.variant_index <> v.variant_index
    group by all
),
tested as (
    select
        rated.*,
        best_other.other.variant_index as compared_variant_index,
        best_other.other.count_sent as compared_count_sent,
        best_other.other.count_replied as compared_count_replied,
        reporting.two_proportion_z(
            rated.count_replied, rated.count_sent,
            best_other.other.count_replied, best_other.other.count_sent
        ) as z_score,
    from rated
    left join best_other using (campaign_id, variant_index)
),
final as (
    select
        campaign_id,
        workspace_id,
        variant_index,
        subject,
        count_variants_in_campaign,
        count_sent,
        count_replied,
        reporting.pct(count_replied, count_sent) as reply_rate,
        compared_variant_index,
        reporting.pct(compared_count_replied, compared_count_sent) as compared_reply_rate,
        round(z_score, 4) as z_score,
        round(reporting.two_sided_p_value(z_score), 6) as p_value,
        coalesce(reporting.two_sided_p_value(z_score) < 0.05, false) as is_significant,
        coalesce(z_score > 0 and reporting.two_sided_p_value(z_score) < 0.05, false) as is_winner,
    from tested
)
select * from final
order by workspace_id, campaign_id, variant_index
