{#-
    The significance test of variant_performance, as SQL expressions. Neither engine has a normal CDF,
    so erfc uses the Abramowitz & Stegun 7.1.26 approximation (absolute error below 1.5e-7; tested
    against scipy in tests/test_models_stats.py). Pass column names, not long expressions: the
    argument is repeated.
-#}

{#- erfc(x) for x >= 0 -#}
{% macro erfc_nonneg(x) -%}
    (
        0.254829592 * (1.0 / (1.0 + 0.3275911 * {{ x }}))
        - 0.284496736 * power(1.0 / (1.0 + 0.3275911 * {{ x }}), 2)
        + 1.421413741 * power(1.0 / (1.0 + 0.3275911 * {{ x }}), 3)
        - 1.453152027 * power(1.0 / (1.0 + 0.3275911 * {{ x }}), 4)
        + 1.061405429 * power(1.0 / (1.0 + 0.3275911 * {{ x }}), 5)
    ) * exp(-({{ x }}) * ({{ x }}))
{%- endmacro %}

{#- standard normal CDF: Phi(z) = 1 - erfc(z / sqrt 2) / 2 for z >= 0, symmetric below 0 -#}
{% macro normal_cdf(z) -%}
    case
        when {{ z }} is null then null
        when {{ z }} >= 0 then 1.0 - 0.5 * {{ erfc_nonneg('(' ~ z ~ ') / sqrt(2.0)') }}
        else 0.5 * {{ erfc_nonneg('-(' ~ z ~ ') / sqrt(2.0)') }}
    end
{%- endmacro %}

{#- two-sided p-value of a z statistic: 2 (1 - Phi(|z|)) = erfc(|z| / sqrt 2) -#}
{% macro two_sided_p_value(z) -%}
    case when {{ z }} is null then null else {{ erfc_nonneg('abs(' ~ z ~ ') / sqrt(2.0)') }} end
{%- endmacro %}

{#- pooled two-proportion z statistic for x1 of n1 against x2 of n2; null when undefined -#}
{% macro two_proportion_z(x1, n1, x2, n2) -%}
    {%- set d = type_double() -%}
    case
        when {{ n1 }} is null or {{ n2 }} is null or {{ n1 }} <= 0 or {{ n2 }} <= 0 then null
        when ({{ x1 }} + {{ x2 }}) = 0 or ({{ x1 }} + {{ x2 }}) = ({{ n1 }} + {{ n2 }}) then null
        else (cast({{ x1 }} as {{ d }}) / {{ n1 }} - cast({{ x2 }} as {{ d }}) / {{ n2 }}) / sqrt(
            (cast({{ x1 }} + {{ x2 }} as {{ d }}) / ({{ n1 }} + {{ n2 }}))
            * (1 - cast({{ x1 }} + {{ x2 }} as {{ d }}) / ({{ n1 }} + {{ n2 }}))
            * (1.0 / {{ n1 }} + 1.0 / {{ n2 }})
        )
    end
{%- endmacro %}
