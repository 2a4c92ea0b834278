"""The A/B test's statistics (models/ab_test.py) on hand-made campaigns, against scipy and textbook values."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy.stats import binomtest, chi2_contingency

from models.ab_test import MIN_RECIPIENTS, NO_WINNER_YET, SINGLE_VARIANT, WINNER, estimate_recipients, variant_tests


def _run(arms: list[tuple[int, int]], sent: int | None = None, contacted: int | None = None) -> pd.DataFrame:
    """One campaign: arms of (messages sent, replied recipients); by default one message per recipient."""
    variants = pd.DataFrame(
        [("c1", i, s, r) for i, (s, r) in enumerate(arms)],
        columns=["campaign_id", "variant_index", "count_sent", "count_replied"],
    )
    total = sum(s for s, _ in arms)
    campaigns = pd.DataFrame(
        [("c1", sent if sent is not None else total, contacted if contacted is not None else total)],
        columns=["campaign_id", "count_sent", "count_contacted"],
    )
    return variant_tests(variants, campaigns).set_index("variant_index")


def test_recipients_are_estimated_from_messages_per_contacted_recipient() -> None:
    # 3,000 messages to 1,000 contacted recipients: 3 messages each, so 600 messages are about 200 recipients
    assert estimate_recipients(600, 3000, 1000, 10) == 200
    assert estimate_recipients(600, 3000, 1000, 250) == 250  # never fewer than those who replied
    assert estimate_recipients(600, 0, 1000, 0) is None and estimate_recipients(600, 3000, 0, 0) is None
    out = _run([(600, 60), (2400, 240)], sent=3000, contacted=1000)
    assert list(out["estimated_recipients"]) == [200, 800]
    assert list(out["reply_rate"]) == [0.3, 0.3]  # per recipient, not the 0.1 per message


def test_textbook_z_test_and_wilson_interval() -> None:
    """200 of 1,000 against 150 of 1,000: z = 2.9424, p = 0.00326 (= Pearson's chi-square without correction)."""
    out = _run([(1000, 200), (1000, 150)])
    _, p_chi, _, _ = chi2_contingency([[200, 800], [150, 850]], correction=False)
    assert out.loc[1, "z_score"] == pytest.approx(-2.9424, abs=1e-4)
    assert out.loc[1, "p_value"] == pytest.approx(p_chi, rel=1e-9)
    assert out.loc[0, "reply_rate_ci_low"] == pytest.approx(0.1763, abs=1e-4)  # Wilson 95% of 200/1000
    assert out.loc[0, "reply_rate_ci_high"] == pytest.approx(0.2259, abs=1e-4)
    assert bool(out.loc[0, "is_winner"]) and out["test_state"].eq(WINNER).all()
    assert int(out["is_winner"].sum()) == 1


def test_holm_adjusts_across_the_campaigns_comparisons() -> None:
    # the leader (index 0) against two arms: Holm multiplies the smaller p by 2, the larger by 1 (monotone)
    out = _run([(1000, 200), (1000, 160), (1000, 150)])
    raw = out.loc[[1, 2], "p_value"]
    adjusted = out.loc[[1, 2], "adjusted_p_value"]
    assert (adjusted >= raw).all()
    assert adjusted[2] == pytest.approx(min(1.0, 2 * raw[2]))
    assert adjusted[1] == pytest.approx(max(adjusted[2], raw[1]))
    assert out.loc[0, "p_value"] == raw.max()  # the leader's row shows its weakest comparison


def test_no_winner_under_100_recipients_even_when_significant() -> None:
    out = _run([(99, 60), (99, 10)])
    assert out.loc[1, "adjusted_p_value"] < 1e-6  # overwhelming evidence, but an arm under the minimum
    assert not out["is_winner"].any() and out["test_state"].eq(NO_WINNER_YET).all()
    assert (out["recipients_needed"] >= MIN_RECIPIENTS - 99).all()
    at_minimum = _run([(100, 60), (100, 10)])
    assert bool(at_minimum.loc[0, "is_winner"])


def test_no_winner_yet_says_how_many_recipients_80_percent_power_needs() -> None:
    # 10% against 12%: Cohen's h = 0.06398, n = 2 (1.96 + 0.8416)^2 / h^2 = 3,835 per arm (the same formula gives
    # Cohen's tabled 392 per group for h = 0.2)
    out = _run([(500, 60), (500, 50)])
    assert not out["is_winner"].any()
    assert out.loc[0, "recipients_needed"] == pytest.approx(3835 - 500, abs=2)
    equal = _run([(500, 50), (500, 50)])
    assert equal["recipients_needed"].isna().all()  # equal rates: no sample size tells them apart


def test_a_single_variant_is_not_a_test() -> None:
    out = _run([(500, 50)])
    assert out.loc[0, "test_state"] == SINGLE_VARIANT and not bool(out.loc[0, "is_winner"])
    assert pd.isna(out.loc[0, "p_value"])


@pytest.mark.parametrize(("replied", "recipients"), [(0, 10), (3, 10), (10, 10), (17, 250), (1, 1), (480, 1000)])
def test_wilson_interval_equals_scipy(replied: int, recipients: int) -> None:
    out = _run([(recipients, replied)])
    expected = binomtest(replied, recipients).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = out.loc[0, "reply_rate_ci_low"], out.loc[0, "reply_rate_ci_high"]
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-9)
