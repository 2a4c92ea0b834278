"""Simulation-time helpers: times are float Unix seconds (UTC); NaN means null."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

import numpy as np

DAY = 86_400.0
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def iso(t: float | None) -> str | None:
    """ISO 8601 UTC with a `Z` suffix, or None for a null time."""
    if t is None or math.isnan(t):
        return None
    return datetime.fromtimestamp(int(t), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_offset(t: float) -> str:
    """ISO 8601 with a numeric UTC offset (`+00:00`), the webhook payload form."""
    return datetime.fromtimestamp(int(t), tz=UTC).isoformat()


def iso_many(values: np.ndarray) -> list[str | None]:
    """Vectorised `iso` for a float array (NaN -> None)."""
    if values.size == 0:
        return []
    nan = np.isnan(values)
    secs = np.where(nan, 0, values).astype("int64").astype("datetime64[s]")
    text = np.char.add(np.datetime_as_string(secs, unit="s"), "Z")
    return [None if n else s for n, s in zip(nan.tolist(), text.tolist(), strict=True)]


def day_string(day_number: int) -> str:
    """YYYY-MM-DD of a UTC day number (Unix seconds // 86400)."""
    return datetime.fromtimestamp(day_number * DAY, tz=UTC).strftime("%Y-%m-%d")


def hhmm_minutes(text: str) -> int:
    """Minutes after midnight of an HH:MM string (already validated)."""
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def local_position(t: float, tz: str) -> tuple[int, float]:
    """(weekday index 0=mon, seconds after local midnight) of instant t in timezone tz."""
    local = datetime.fromtimestamp(t, tz=zone(tz))
    return local.weekday(), local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6


def window_intervals(
    t0: float, t1: float, tz: str, start: str, end: str, days: tuple[str, ...]
) -> list[tuple[float, float]]:
    """UTC [from, to) intervals of a daily local send window between instants t0 and t1."""
    out: list[tuple[float, float]] = []
    if t1 <= t0:
        return out
    z = zone(tz)
    s_min, e_min = hhmm_minutes(start), hhmm_minutes(end)
    day = datetime.fromtimestamp(t0, tz=z).date()
    last = datetime.fromtimestamp(t1, tz=z).date()
    while day <= last:
        if WEEKDAYS[day.weekday()] in days:
            midnight = datetime(day.year, day.month, day.day, tzinfo=z)
            a = (midnight + timedelta(minutes=s_min)).timestamp()
            b = (midnight + timedelta(minutes=e_min)).timestamp()
            a, b = max(a, t0), min(b, t1)
            if b > a:
                out.append((a, b))
        day += timedelta(days=1)
    return out


def is_valid_timezone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except Exception:  # noqa: BLE001 - any failure means "not a usable IANA zone"
        return False
    return True
