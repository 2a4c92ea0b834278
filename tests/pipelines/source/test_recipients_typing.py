"""The recipients' typing takes the API's own forms first, without the general rules' tests; for every value it
must type as the general rules do (pipelines/source/typing_rules.py, pipelines/core/timestamps.py)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pytest

from pipelines.core.timestamps import TimestampError, parse_instant
from pipelines.source.recipients_arrow import RECIPIENT_SCHEMA, _columns_as_sent, _typed_recipient, _typed_row_by_row
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


def _row_by_row(records: list[Any]) -> tuple[dict[str, pa.Array], Counter[str], int]:
    coerced: Counter[str] = Counter()
    rejected: list[str] = []
    rows = [("c1", i, rec) for i, rec in enumerate(records)]
    _, columns = _typed_row_by_row(rows, coerced, lambda position, reason, raw: rejected.append(reason))
    return columns, coerced, len(rejected)


def _api_instant(rng: random.Random) -> str:
    """A timestamp in the API's form, with a day that may not exist in its month, a fraction and an offset."""
    moment = f"{rng.randint(1990, 2099)}-{rng.randint(1, 12):02}-{rng.randint(1, 31):02}"
    moment += rng.choice("T ") + f"{rng.randint(0, 23):02}:{rng.randint(0, 59):02}:{rng.randint(0, 59):02}"
    moment += rng.choice(["", "." + str(rng.randint(0, 999_999)).zfill(6)[: rng.randint(1, 6)]])
    return moment + rng.choice(["Z", f"{rng.choice('+-')}{rng.randint(0, 23):02}:{rng.randint(0, 59):02}"])


def test_whenever_the_columns_answer_they_equal_the_row_by_row_rules() -> None:
    """Arrow types a batch only when that gives what the general rules give, value for value; any other value
    sends the whole batch to the rules (None)."""
    rng = random.Random(7)
    values = [*SAMPLES, 2**63, -(2**63), 2**63 - 1, 10**30, -0.0]
    cases = [(field, value) for field in SENT for value in values]
    # every timestamp field is typed alike: one takes the random instants
    cases += [(RECIPIENT_SCHEMA.field("opened_at"), _api_instant(rng)) for _ in range(1500)]
    answered = 0
    for field, value in cases:
        records = [{"id": "r0", "status": "sent"}, {"id": "r1", field.name: value}]
        columns = _columns_as_sent(records)
        if columns is None:
            continue
        answered += 1
        expected, coerced, rejected = _row_by_row(records)
        assert (coerced, rejected) == (Counter(), 0), (field.name, value)
        assert columns[field.name].equals(expected[field.name]), (field.name, value)
    assert answered > 1500  # the API's own forms are typed by columns


def test_a_batch_in_the_api_forms_is_typed_by_columns_as_row_by_row() -> None:
    rng = random.Random(11)
    records: list[Any] = [
        {
            "id": f"r{i}", "email": f"p{i}@example.com", "first_name": rng.choice([None, "Ana"]), "status": "sent",
            "current_step": rng.choice([None, 0, 3]), "last_sent_at": "2026-11-20T14:03:00Z",
            "opened_at": rng.choice([None, "2026-11-21T08:00:00.25+01:00"]),
        }
        for i in range(500)
    ]  # fmt: skip
    columns = _columns_as_sent(records)
    assert columns is not None
    expected, _, _ = _row_by_row(records)
    assert all(columns[name].equals(expected[name]) for name in expected), "columns differ"
    for bad in (
        {"id": ""},
        {"id": None},
        {"id": "r", "current_step": True},
        {"id": "r", "opened_at": "2026-02-30T00:00:00Z"},
        "x",
    ):
        assert _columns_as_sent([*records, bad]) is None, bad
