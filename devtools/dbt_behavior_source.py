"""dbt's behaviour flags find the module that declared them without reading the stack's source files.

Each dbt command makes its adapter anew, and the adapter renders every behaviour flag it declares. A flag with
no `source` is given the name of the module that declared it by dbt-common's
`BehaviorFlagRendered._default_source`, which calls `inspect.stack()`: that reads the source lines of every
frame on the stack and, for each frame whose file is no module's (pytest-xdist's workers run code sent to them
as text), walks all of `sys.modules`. In the test suite's processes, with their deep pytest stacks and
thousands of modules, that is tens of milliseconds a flag, paid by every dbt command.

The replacement walks the same frames and reads each one's module name from its globals: the same name, with
no file read. The name only labels dbt's "behaviour change" event. This replaces a private function of
dbt-common: kept in this one module, for the suite only (the product never imports it), and
tests/models/test_dbt_behavior_source.py fails when dbt-common changes it.
"""

from __future__ import annotations

import sys


def _declaring_module() -> str:
    """The first module up the stack other than dbt-common's behavior_flags (what dbt-common's own returns)."""
    from dbt_common import behavior_flags

    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if name and name != behavior_flags.__name__:
            return str(name)
        frame = frame.f_back  # type: ignore[assignment]
    return "Unknown"


def install() -> None:
    """Make this process's dbt name a flag's module from the stack's frames, not their source files."""
    from dbt_common.behavior_flags import BehaviorFlagRendered

    BehaviorFlagRendered._default_source = staticmethod(_declaring_module)  # type: ignore[method-assign]
