"""The A/B test of subject lines, per recipient, with statsmodels (variant_performance's statistics).

The unit is the recipient: the API gives each variant's messages sent and replied recipients, and a
recipient gets several messages (the first email and its follow-ups), so messages are not a sample size.
Each variant's recipients are estimated from the campaign's messages per contacted recipient:

    estimated_recipients = round(variant messages sent * contacted recipients / campaign messages sent)

(at least the variant's replied recipients). The assumption: every variant's recipients got the same
number of messages on average (the variant is the subject line, the sequence is the campaign's).

Per campaign with two or more variants: each variant's reply rate with a 95% Wilson interval; the leader
(highest rate, ties: more recipients, then the lower index) against every other variant, a pooled
two-proportion z-test each, Holm-adjusted across the campaign's comparisons. A winner needs every arm to
have at least MIN_RECIPIENTS estimated recipients and every comparison's adjusted p below ALPHA; otherwise
the state is "no winner yet" with the approximate recipients per arm still needed for 80% power.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint, proportion_effectsize, proportions_ztest

from models.ab_columns import COLUMNS

ALPHA = 0.05
POWER = 0.8
MIN_RECIPIENTS = 100

WINNER = "winner"
NO_WINNER_YET = "no winner yet"
SINGLE_VARIANT = "single variant"
NO_DATA = "no recipients"


def estimate_recipients(variant_sent: int, campaign_sent: int, contacted: int, replied: int) -> int | None:
    """A variant's recipients from the campaign's messages per contacted recipient (None when unknown)."""
    if campaign_sent <= 0 or contacted <= 0:
        return None
    return max(round(variant_sent * contacted / campaign_sent), replied)


@dataclass
class Arm:
    """One variant's row (COLUMNS)."""

    campaign_id: str
    variant_index: int
    replied: int
    estimated_recipients: int | None
    reply_rate: float | None = None
    reply_rate_ci_low: float | None = None
    reply_rate_ci_high: float | None = None
    compared_variant_index: int | None = None
    z_score: float | None = None
    p_value: float | None = None
    adjusted_p_value: float | None = None
    is_winner: bool = False
    test_state: str = NO_WINNER_YET
    recipients_needed: int | None = None

    def row(self) -> dict[str, Any]:
        return {column: getattr(self, column) for column in COLUMNS}


def variant_tests(variants: pd.DataFrame, campaigns: pd.DataFrame) -> pd.DataFrame:
    """One row per variant (COLUMNS). `variants`: campaign_id, variant_index, count_sent, count_replied;
    `campaigns`: campaign_id, count_sent, count_contacted (the stats endpoint's totals)."""
    totals = {
        str(cid): (int(sent), int(contacted))
        for cid, sent, contacted in zip(
            campaigns["campaign_id"], campaigns["count_sent"], campaigns["count_contacted"], strict=True
        )
    }
    rows: list[dict[str, Any]] = []
    ordered = variants.sort_values(["campaign_id", "variant_index"])
    # statsmodels' Holm correction runs a full garbage collection on every call: over a large warehouse's
    # heap that cost 0.1 s per campaign (32 s of a 56 s build at 1M recipients). Frozen, the objects that
    # exist already are skipped by those collections; unfrozen after, nothing else changes.
    gc.freeze()
    try:
        for campaign_id, arms in ordered.groupby("campaign_id", sort=True):
            cid = str(campaign_id)
            built = [
                _arm(cid, int(index), int(sent), int(replied), totals.get(cid))
                for index, sent, replied in zip(
                    arms["variant_index"], arms["count_sent"], arms["count_replied"], strict=True
                )
            ]
            _test(built)
            rows.extend(arm.row() for arm in built)
    finally:
        gc.unfreeze()
    return pd.DataFrame(rows, columns=COLUMNS)


def _arm(campaign_id: str, index: int, sent: int, replied: int, total: tuple[int, int] | None) -> Arm:
    n = None if total is None else estimate_recipients(sent, total[0], total[1], replied)
    arm = Arm(campaign_id, index, replied, n)
    if n:
        low, high = proportion_confint(replied, n, alpha=ALPHA, method="wilson")
        arm.reply_rate, arm.reply_rate_ci_low, arm.reply_rate_ci_high = replied / n, float(low), float(high)
    return arm


def _test(arms: list[Arm]) -> None:
    """The leader against each other arm, Holm-adjusted; fills the arms in place."""
    if len(arms) < 2:
        for arm in arms:
            arm.test_state = SINGLE_VARIANT
        return
    sized = [(arm, arm.estimated_recipients, arm.reply_rate) for arm in arms]
    if any(not n or rate is None for _, n, rate in sized):
        for arm in arms:
            arm.test_state = NO_DATA
        return
    rate_of = {id(arm): float(rate or 0.0) for arm, _, rate in sized}
    n_of = {id(arm): int(n or 0) for arm, n, _ in sized}
    leader = max(arms, key=lambda a: (rate_of[id(a)], n_of[id(a)], -a.variant_index))
    others = [arm for arm in arms if arm is not leader]
    raw: list[float] = []
    for other in others:
        z, p = _ztest(leader.replied, n_of[id(leader)], other.replied, n_of[id(other)])
        other.compared_variant_index, other.p_value = leader.variant_index, p
        other.z_score = None if z is None else -z
        raw.append(1.0 if p is None else p)
    adjusted = [float(a) for a in multipletests(raw, alpha=ALPHA, method="holm")[1]]
    for other, adj in zip(others, adjusted, strict=True):
        other.adjusted_p_value = adj if other.p_value is not None else None
    # the leader's own row: its weakest comparison (the largest p), against that arm
    weakest = others[max(range(len(others)), key=lambda i: (raw[i], adjusted[i]))]
    leader.compared_variant_index = weakest.variant_index
    leader.z_score = None if weakest.z_score is None else -weakest.z_score
    leader.p_value, leader.adjusted_p_value = weakest.p_value, weakest.adjusted_p_value
    smallest = min(n_of.values())
    significant = all(o.adjusted_p_value is not None and o.adjusted_p_value < ALPHA for o in others)
    if smallest >= MIN_RECIPIENTS and significant:
        leader.is_winner = True
        for arm in arms:
            arm.test_state = WINNER
        return
    runner_up = max(others, key=lambda a: rate_of[id(a)])
    needed = _recipients_needed(rate_of[id(leader)], rate_of[id(runner_up)], len(others))
    for arm in arms:
        arm.recipients_needed = None if needed is None else max(max(needed, MIN_RECIPIENTS) - n_of[id(arm)], 0)


def _ztest(x1: int, n1: int, x2: int, n2: int) -> tuple[float | None, float | None]:
    """Pooled two-proportion z-test (two-sided); None where undefined (no replies at all, or all replied)."""
    if x1 + x2 == 0 or x1 + x2 == n1 + n2:
        return None, None
    z, p = proportions_ztest(np.array([x1, x2]), np.array([n1, n2]), alternative="two-sided")
    return float(z), float(p)


def _recipients_needed(p1: float, p2: float, comparisons: int) -> int | None:
    """Recipients per arm for 80% power to tell p1 from p2 at ALPHA split over the comparisons (Bonferroni,
    Holm's first step: a conservative figure). None when the rates are equal (no finite sample tells them)."""
    effect = abs(float(proportion_effectsize(p1, p2)))
    if effect == 0 or not math.isfinite(effect):
        return None
    n = NormalIndPower().solve_power(effect_size=effect, alpha=ALPHA / comparisons, power=POWER, ratio=1.0)
    return math.ceil(float(n))
