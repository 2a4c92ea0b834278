"""When a value of another JSON type may be loaded into a column, and as what: only when nothing is lost.

"42" into a bigint column, 7 into a text column, an RFC 2822 or epoch timestamp into its UTC instant are
coerced; a value that cannot be is `NOTHING`, and its record is rejected (pipelines.source.quarantine), never
loaded with a NULL or a variant column.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any

import pyarrow as pa

from pipelines.core.timestamps import TimestampError, parse_optional

DRIFT_METADATA = b"outreach.drift"
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
ISO_LIKE = re.compile(r"\d{4}-\d\d-\d\d([T ]|$)")


def json_scalar(value: Any) -> Any:
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else value


NOTHING: Any = object()


def is_natural(value: Any, typ: pa.DataType) -> bool:
    """Whether `value` has the JSON type the API sends for a column of `typ` (an ISO string for a timestamp)."""
    if pa.types.is_integer(typ):
        return isinstance(value, int) and not isinstance(value, bool)
    if pa.types.is_floating(typ):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if pa.types.is_timestamp(typ):
        return isinstance(value, datetime) or (isinstance(value, str) and ISO_LIKE.match(value) is not None)
    if pa.types.is_string(typ):
        return isinstance(value, str)
    return True


def coerce_scalar(value: Any, typ: pa.DataType) -> Any:
    """`value` as `typ` when no information is lost, else `NOTHING`."""
    if pa.types.is_integer(typ):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return NOTHING
    if pa.types.is_floating(typ):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()) and math.isfinite(float(value)):
            return float(value)
        return NOTHING
    if pa.types.is_string(typ):
        return (
            value if isinstance(value, str) else json.dumps(value) if isinstance(value, (int, float, bool)) else NOTHING
        )
    try:
        return pa.array([value], typ)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return NOTHING


def typed_value(value: Any, typ: pa.DataType) -> tuple[Any, bool]:
    """`value` for a column of `typ` by these rules: (the value, or `NOTHING`; whether it was coerced)."""
    if pa.types.is_timestamp(typ):
        try:
            converted = parse_optional(value)
        except TimestampError:
            converted = NOTHING
    else:
        converted = coerce_scalar(value, typ)
    return converted, converted is not NOTHING and not is_natural(value, typ)


def inferred_array(values: list[Any]) -> pa.Array:
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        arr = pa.array([None if v is None else str(v) for v in values], pa.string())
    if pa.types.is_null(arr.type):
        arr = pa.array(values, pa.string())
    return arr


# the JSON types the API sends for a column of each dlt data type; anything else is type drift
NATURAL_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "bigint": (int,),
    "double": (int, float),
    "decimal": (int, float),
    "bool": (bool,),
    "text": (str,),
    "timestamp": (str, datetime),
    "date": (str,),
}


def coerce_json(value: Any, data_type: str) -> Any:
    """`value` (a JSON scalar) as a value of dlt `data_type` when nothing is lost, else `NOTHING`:
    numbers only from plain decimal text (or an integral float), booleans only from true/false, text from
    numbers and booleans (their JSON spelling). A refused value rejects its record (`DriftGuard.check`)."""
    if data_type == "bigint":
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return NOTHING
    if data_type in ("double", "decimal"):
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()) and math.isfinite(float(value)):
            return float(value)
        return NOTHING
    if data_type == "bool":
        text = value.strip().lower() if isinstance(value, str) else None
        return {"true": True, "false": False}.get(text, NOTHING) if text is not None else NOTHING
    if data_type == "text":
        return json.dumps(value) if isinstance(value, (int, float, bool)) else NOTHING
    return NOTHING
