"""Option types that several commands share (one definition, so each command offers the same choices)."""

from __future__ import annotations

from enum import StrEnum


class Destination(StrEnum):
    duckdb = "duckdb"
    postgres = "postgres"
