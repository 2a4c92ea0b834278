"""The bounds of numeric settings, without dlt: `outreach sync` checks the values it was given before its first
API request (dlt is imported after it), and the resolved settings of the sync (pipelines/core/config.py) and of
the alerts (alerts/settings.py) are checked against the same bounds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipelines.core.errors import ConfigError


@dataclass(frozen=True)
class Bound:
    """Values from `low` (itself allowed if `low_ok`) up to `high`; `says` is the bound in words."""

    low: float
    low_ok: bool
    says: str
    high: float = float("inf")


AT_LEAST_1 = Bound(1, True, "at least 1")
SECONDS = Bound(0, True, "0 or more seconds")
SOME_SECONDS = Bound(0, False, "more than 0 seconds")

#: `[sources.outreach]`
BOUNDS: dict[str, Bound] = {
    "workers": AT_LEAST_1,
    "batch_size": AT_LEAST_1,
    "rate_limit_per_minute": Bound(0, True, "0 (off) or more"),
    "lock_timeout_s": SECONDS,
    "sync_timeout_s": SECONDS,
    "max_retry_after_s": SECONDS,
    "request_timeout": SOME_SECONDS,
    "stall_timeout_s": SOME_SECONDS,
}


def check_bounds(
    values: Mapping[str, Any], bounds: Mapping[str, Bound] = BOUNDS, section: str = "sources.outreach"
) -> None:
    """Raise ConfigError naming the first setting of `values` out of its bound (None: not given)."""
    for name, value in values.items():
        bound = bounds.get(name)
        if value is None or bound is None:
            continue
        if value < bound.low or (value == bound.low and not bound.low_ok) or value > bound.high:
            raise ConfigError(f"{section}.{name} must be {bound.says}, got {value}")
