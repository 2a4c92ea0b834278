"""Merge fields (`{{first_name|there}}`) in campaign subjects and bodies, filled per recipient."""

from __future__ import annotations

import re

_MERGE = re.compile(r"\{\{\s*([a-zA-Z_]+)\s*(?:\|([^}]*))?\}\}")


def render(template: str, values: dict[str, str]) -> str:
    """Substitute `{{field|fallback}}` and `{{field}}` merge fields."""

    def _one(match: re.Match[str]) -> str:
        value = values.get(match.group(1), "")
        return value or (match.group(2) or "")

    return _MERGE.sub(_one, template)
