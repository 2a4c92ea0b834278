"""DuckDB's memory settings as DuckDB reads them: how many threads a load's memory limit can feed."""

from __future__ import annotations

import os
import re

#: DuckDB's minimum memory per thread (its performance guide: "a minimum of 125 MB of memory per thread")
MEMORY_PER_THREAD = 125 * 1000**2
_UNITS = {
    "b": 1, "byte": 1, "bytes": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}  # fmt: skip


def memory_bytes(limit: str) -> int | None:
    """A DuckDB memory setting ('64MB', '1 GiB': units as DuckDB reads them) in bytes; None when it is not one."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*", limit)
    if match is None or match.group(2).lower() not in _UNITS:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def load_threads(limit: str) -> int | None:
    """The threads a load's DuckDB gets under memory `limit`: one per `MEMORY_PER_THREAD`, at least one, at most
    one per core; None when `limit` is no size ('80%', '-1'), which leaves DuckDB's own choice.

    DuckDB starts a thread per core and needs about 125 MB for each, whatever it spills: under a smaller share a
    load's merge failed out of memory (the 64MB default on 2 cores, a full sync's 1M staged recipients)."""
    size = memory_bytes(limit)
    return None if size is None else max(1, min(os.cpu_count() or 1, size // MEMORY_PER_THREAD))
