"""Benchmarks: our sync beside a dlt rest_api baseline and the lower bound, measured in the same run (see README.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def with_checkout_on_path(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a child process that imports `bench` or `devtools`: they are not installed (only the product
    is), so the checkout goes first on PYTHONPATH."""
    rest = env.get("PYTHONPATH", "")
    return {**env, "PYTHONPATH": str(ROOT) + (os.pathsep + rest if rest else "")}
