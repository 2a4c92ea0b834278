"""The bounds of the sync's numeric settings, without dlt: `outreach sync` checks the values it was given before
its first API request (dlt is imported after it), and the resolved settings are checked against the same
bounds (pipelines/core/config.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipelines.core.errors import ConfigError

#: setting -> (the smallest value allowed, whether that value itself is allowed, what the bound says)
BOUNDS: dict[str, tuple[float, bool, str]] = {
    "workers": (1, True, "at least 1"),
    "batch_size": (1, True, "at least 1"),
    "rate_limit_per_minute": (0, True, "0 (off) or more"),
    "lock_timeout_s": (0, True, "0 or more seconds"),
    "sync_timeout_s": (0, True, "0 or more seconds"),
    "max_retry_after_s": (0, True, "0 or more seconds"),
    "request_timeout": (0, False, "more than 0 seconds"),
    "stall_timeout_s": (0, False, "more than 0 seconds"),
}


def check_bounds(values: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the first setting of `values` out of its bound (None: not given)."""
    for name, value in values.items():
        if value is None or name not in BOUNDS:
            continue
        least, allowed, says = BOUNDS[name]
        if value < least or (value == least and not allowed):
            raise ConfigError(f"sources.outreach.{name} must be {says}, got {value}")
