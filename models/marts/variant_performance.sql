with campaigns as (
    select campaign_id from {{ ref('stg_campaigns') }}
),

variants as (
    select variants.*
    from {{ ref('stg_campaign_variants') }} as variants
    inner join campaigns on variants.campaign_id = campaigns.campaign_id
),

rated as (
    select
        variants.*,
        cast(count_replied as {{ type_double() }}) / nullif(count_sent, 0) as reply_share,
        count(*) over (partition by campaign_id) as count_variants_in_campaign
    from variants
),

ranked_others as (
    -- for each variant, the campaign's other variants from the highest reply rate down
    -- (ties: more sends, then the lower index)
    select
        this.campaign_id,
        this.variant_index,
        other.variant_index as other_index,
        other.count_sent as other_sent,
        other.count_replied as other_replied,
        row_number() over (
            partition by this.campaign_id, this.variant_index
            order by coalesce(other.reply_share, -1) desc, other.count_sent desc, other.variant_index asc
        ) as rank_among_others
    from rated as this
    inner join rated as other
        on this.campaign_id = other.campaign_id
        and this.variant_index <> other.variant_index
),

best_other as (
    select * from ranked_others
    where rank_among_others = 1
),

tested as (
    select
        rated.*,
        best_other.other_index as compared_variant_index,
        best_other.other_sent as compared_count_sent,
        best_other.other_replied as compared_count_replied,
        {{ two_proportion_z('rated.count_replied', 'rated.count_sent', 'best_other.other_replied', 'best_other.other_sent') }}
            as z_raw
    from rated
    left join best_other
        on rated.campaign_id = best_other.campaign_id
        and rated.variant_index = best_other.variant_index
),

with_p as (
    select
        tested.*,
        {{ two_sided_p_value('z_raw') }} as p_raw
    from tested
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
        {{ pct('count_replied', 'count_sent') }} as reply_rate,
        {{ pct('count_replied', 'count_sent') }} as reply_rate_of_sent,
        compared_variant_index,
        {{ pct('compared_count_replied', 'compared_count_sent') }} as compared_reply_rate,
        {{ round_to('z_raw', 4) }} as z_score,
        {{ round_to('p_raw', 6) }} as p_value,
        coalesce(p_raw < 0.05, false) as is_significant,
        coalesce(z_raw > 0 and p_raw < 0.05, false) as is_winner
    from with_p
)

select * from final
order by workspace_id, campaign_id, variant_index
