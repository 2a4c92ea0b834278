"""dbt's parse made ahead in a process of its own is the one the build then reads (`outreach demo` relies on it)."""

from __future__ import annotations

from pathlib import Path

from models.build import ATOMIC_VARS
from models.dbt_invoke import invoke
from models.parse_ahead import start
from models.settings import resolve_target


def test_a_parse_ahead_spares_the_next_invocation_a_full_parse_and_never_touches_the_warehouse(
    tmp_path: Path,
) -> None:
    # control: with no saved parse, dbt parses the whole project, and the invocation says so
    fresh = resolve_target(tmp_path / "fresh" / "w.duckdb")
    assert invoke(["parse"], fresh, dbt_vars=ATOMIC_VARS).full_parse

    warehouse = tmp_path / "ahead" / "w.duckdb"
    ahead = start(warehouse)
    assert ahead.wait(timeout_s=600), "python -m models.parse_ahead failed: see dbt.log in its dbt directory"
    assert ahead.seconds is not None and ahead.seconds > 0
    target = resolve_target(warehouse)
    assert (target.state_dir / "target" / "partial_parse.msgpack").is_file()
    assert not warehouse.exists(), "dbt parse opened the warehouse while the syncs may be loading it"

    # the build's vars: the saved parse is taken as it is
    outcome = invoke(["parse"], target, dbt_vars=ATOMIC_VARS)
    assert outcome.success and not outcome.full_parse


def test_a_parse_ahead_that_is_stopped_leaves_no_process(tmp_path: Path) -> None:
    ahead = start(tmp_path / "w.duckdb")
    ahead.stop()
    assert ahead.process.poll() is not None
    assert not ahead.wait(timeout_s=1), "a killed parse must not count as a saved one"
