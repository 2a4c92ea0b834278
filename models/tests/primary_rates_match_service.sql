-- The six primary rates of campaign_performance equal the service's own (GET /campaigns/{id}/stats,
-- rates.* are percentages rounded to 2 decimals) divided by 100, to 4 decimal places, for every campaign
-- with synced stats (rows = campaigns and rates that differ by more than the service's rounding).
{%- set rates = ['open', 'click', 'reply', 'bounce', 'unsubscribe', 'progress'] %}
with stats as (
    select * from {{ ref('stg_campaign_stats') }}
),

performance as (
    select * from {{ ref('campaign_performance') }}
),

compared as (
    {%- for rate in rates %}
    select
        performance.campaign_id,
        '{{ rate }}_rate' as metric,
        performance.{{ rate }}_rate as mart_value,
        stats.api_{{ rate }}_rate / 100.0 as service_value
    from performance
    inner join stats on performance.campaign_id = stats.campaign_id
    where stats.api_{{ rate }}_rate is not null
    {{ 'union all' if not loop.last }}
    {%- endfor %}
)

-- the service rounds to 0.0001 as a fraction: half of that, plus float noise, is the largest honest gap
select * from compared
where mart_value is null or abs(mart_value - service_value) > 0.00005 + 1e-9
