-- Statistics helpers. DuckDB has no normal CDF builtin, so erf uses the
-- Abramowitz & Stegun 7.1.26 approximation (absolute error below 1.5e-7).

-- erfc(x) for x >= 0
create or replace macro reporting.erfc_nonneg(x) as (
    (
        0.254829592 * (1.0 / (1.0 + 0.3275911 * x))
        - 0.284496736 * pow(1.0 / (1.0 + 0.3275911 * x), 2)
        + 1.421413741 * pow(1.0 / (1.0 + 0.3275911 * x), 3)
        - 1.453152027 * pow(1.0 / (1.0 + 0.3275911 * x), 4)
        + 1.061405429 * pow(1.0 / (1.0 + 0.3275911 * x), 5)
    ) * exp(-x * x)
);

-- standard normal CDF: Phi(z) = 1 - erfc(z / sqrt 2) / 2 for z >= 0, symmetric below 0
create or replace macro reporting.normal_cdf(z) as (
    case
        when z is null then null
        when z >= 0 then 1.0 - 0.5 * reporting.erfc_nonneg(z / sqrt(2.0))
        else 0.5 * reporting.erfc_nonneg(-z / sqrt(2.0))
    end
);

-- two-sided p-value of a z statistic: 2 * (1 - Phi(|z|)) = erfc(|z| / sqrt 2)
create or replace macro reporting.two_sided_p_value(z) as (
    case when z is null then null else reporting.erfc_nonneg(abs(z) / sqrt(2.0)) end
);

-- pooled two-proportion z statistic for x1 of n1 against x2 of n2; null when undefined
create or replace macro reporting.two_proportion_z(x1, n1, x2, n2) as (
    case
        when n1 is null or n2 is null or n1 <= 0 or n2 <= 0 then null
        when (x1 + x2) = 0 or (x1 + x2) = (n1 + n2) then null
        else (x1 / n1::double - x2 / n2::double) / sqrt(
            ((x1 + x2) / (n1 + n2)::double) * (1 - (x1 + x2) / (n1 + n2)::double) * (1.0 / n1 + 1.0 / n2)
        )
    end
);

-- percentage with a null (not a division error) when the denominator is 0 or null, 2 decimals
create or replace macro reporting.pct(numerator, denominator) as (
    case when coalesce(denominator, 0) = 0 then null else round(100.0 * numerator / denominator, 2) end
);
