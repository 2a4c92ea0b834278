"""Read models/README.md: each mart's grain and its documented columns (the test keeps them true)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

README = Path(__file__).resolve().parent / "README.md"
_HEADING = re.compile(r"^### `([a-z_]+)`\s*$")
_GRAIN = re.compile(r"^Grain: (.+)$")
_ROW = re.compile(r"^\|\s*`([a-z_0-9]+)`\s*\|\s*([^|]+?)\s*\|\s*(.+?)\s*\|\s*$")


@dataclass
class TableDoc:
    name: str
    grain: str = ""
    columns: dict[str, str] = field(default_factory=dict)  # column -> meaning (ordered as documented)
    types: dict[str, str] = field(default_factory=dict)


def load_docs(path: Path = README) -> dict[str, TableDoc]:
    """Tables documented under `### \\`name\\`` headings with a `Grain:` line and a column table."""
    docs: dict[str, TableDoc] = {}
    current: TableDoc | None = None
    for line in path.read_text().splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = docs.setdefault(heading.group(1), TableDoc(heading.group(1)))
            continue
        if line.startswith("## "):
            current = None
            continue
        if current is None:
            continue
        grain = _GRAIN.match(line)
        if grain:
            current.grain = grain.group(1).strip()
            continue
        row = _ROW.match(line)
        if row:
            current.columns[row.group(1)] = row.group(3).replace("`", "")
            current.types[row.group(1)] = row.group(2)
    return docs
