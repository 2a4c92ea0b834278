"""The suite's cheaper module lookup for dbt's behaviour flags (devtools/dbt_behavior_source.py) names the same
module as dbt-common's own, and fails here when dbt-common changes the function it replaces."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

from dbt_common.behavior_flags import BehaviorFlagRendered

from devtools.dbt_behavior_source import install

_FLAG = {"name": "some_flag", "default": False, "description": "declared by the caller"}

_DECLARER = """
from dbt_common.behavior_flags import BehaviorFlagRendered

def declare():
    return BehaviorFlagRendered({flag!r}, {{}})._behavior_change_event.flag_source
"""
_BOTH = """
from declarer import declare
from devtools.dbt_behavior_source import install

print(declare())
install()
print(declare())
"""


def test_dbt_commons_function_is_still_there_as_the_replacement_expects() -> None:
    original = inspect.getattr_static(BehaviorFlagRendered, "_default_source")
    assert isinstance(original, staticmethod) and not inspect.signature(original.__func__).parameters
    assert "self._default_source()" in inspect.getsource(BehaviorFlagRendered.__init__)


def test_the_replacement_names_the_module_dbt_commons_own_names(tmp_path: Path) -> None:
    """Before and after install(), in a process of its own (this one has it installed already)."""
    (tmp_path / "declarer.py").write_text(_DECLARER.format(flag=_FLAG))
    (tmp_path / "both.py").write_text(_BOTH)
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo)])}
    done = subprocess.run(
        [sys.executable, str(tmp_path / "both.py")], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    assert done.stdout.split() == ["declarer", "declarer"], done.stderr


def test_a_flag_declared_here_is_named_after_this_module() -> None:
    install()
    event = BehaviorFlagRendered(_FLAG, {})._behavior_change_event  # type: ignore[arg-type]
    assert event.flag_source == __name__
