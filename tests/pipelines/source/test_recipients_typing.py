"""The recipients' typing takes the API's own forms first, without the general rules' tests; for every value it
must type as the general rules do (pipelines/source/typing_rules.py, pipelines/core/timestamps.py)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest

from pipelines.core.timestamps import TimestampError, parse_instant
from pipelines.source.recipients_arrow import RECIPIENT_SCHEMA, _typed_recipient
from pipelines.source.typing_rules import NOTHING, typed_value

SAMPLES: list[Any] = [
    "2026-11-20T14:03:00Z", "2026-11-20T14:03:00.123456z", "2026-11-20 14:03:00", "2026-11-20T14:03:00+02:00",
    "2026-11-20", " 2026-11-20T14:03:00Z ", "2026-13-40T00:00:00Z", "2026-11-20Tnonsense",
    "Fri, 20 Nov 2026 14:03:00 GMT", "20 Nov 2026 14:03:00 +0100", "Fri, 99 Nov 2026 14:03:00 GMT",
    "1763647380", "1763647380123", "-12.5", "1e3", "", "   ", "not a date", "two", "42", " 7 ", "4.0",
    1763647380, 1763647380.5, 1763647380123, 0, -3, 4.0, 4.5, float("nan"), float("inf"), True, False,
    {"a": 1}, ["x"], datetime(2026, 11, 20, 14, 3), datetime(2026, 11, 20, 14, 3, tzinfo=timezone(timedelta(hours=2))),
]  # fmt: skip
SENT = [
    f
    for f in RECIPIENT_SCHEMA
    if f.name not in {"campaign_id", "list_position", "workspace_id", "synced_at", "deleted_at"}
]


@pytest.mark.parametrize("field", SENT, ids=lambda f: f.name)
def test_every_value_is_typed_as_the_general_rules_type_it(field: pa.Field) -> None:
    for value in SAMPLES:
        coerced: Counter[str] = Counter()
        typed, reason = _typed_recipient({"id": "r1", field.name: value}, coerced)
        expected, counted = typed_value(value, field.type)
        if field.name == "id" and value == "":
            assert (typed, reason) == ({}, "no id (primary key)")
            continue
        if expected is NOTHING:
            assert (typed, reason) == ({}, f"cannot be typed: {field.name} as {field.type}"), value
            continue
        assert reason is None, (value, reason)
        assert field.name in typed and typed[field.name] == expected, (value, typed)
        assert type(typed[field.name]) is type(expected), value
        assert coerced == (Counter({field.name: 1}) if counted else Counter()), value


def test_an_iso_timestamp_is_read_first_and_as_before() -> None:
    """ISO text is tried first; neither an epoch nor an RFC 2822 date starts with a date, so nothing else changes."""
    assert parse_instant("2026-11-20T14:03:00Z") == datetime(2026, 11, 20, 14, 3, tzinfo=UTC)
    assert parse_instant(" 2026-11-20 16:03:00+02:00 ") == datetime(2026, 11, 20, 14, 3, tzinfo=UTC)
    assert parse_instant("1763647380") == datetime.fromtimestamp(1763647380, UTC)
    assert parse_instant("Fri, 20 Nov 2026 14:03:00 GMT") == datetime(2026, 11, 20, 14, 3, tzinfo=UTC)
    with pytest.raises(TimestampError):
        parse_instant("2026-13-40T00:00:00Z")
