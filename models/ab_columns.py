"""The A/B statistics' columns, in order, with their SQL types: what models/ab_test.py computes and
models/ab_store.py stores. A module of its own, so that storing needs neither statsmodels nor pandas."""

from __future__ import annotations

COLUMN_TYPES = {
    "campaign_id": "text",
    "variant_index": "bigint",
    "estimated_recipients": "bigint",
    "reply_rate": "double precision",
    "reply_rate_ci_low": "double precision",
    "reply_rate_ci_high": "double precision",
    "compared_variant_index": "bigint",
    "z_score": "double precision",
    "p_value": "double precision",
    "adjusted_p_value": "double precision",
    "is_winner": "boolean",
    "test_state": "text",
    "recipients_needed": "bigint",
}
COLUMNS = list(COLUMN_TYPES)
