"""The dlt state of a warehouse's pipelines: found damaged, and forgotten on request (`outreach sync --reset-state`).

A pipeline's local working directory (``outreach_*`` in the warehouse's own dlt working directory,
`pipelines.warehouse.destination.dlt_working_dir`) holds its dlt state (``state.json``),
its schemas and the load packages not committed yet. When it is damaged, dlt fails with a decoding error
that names neither the file nor the fix; `state_problem` turns that into one line. Forgetting it keeps
every committed row in the warehouse; what was only pending there is read again from the API by the
full sync that `--reset-state` runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipelines.core import constants
from pipelines.core.errors import OutreachError

STATE_FILE = "state.json"  # dlt's name for a pipeline's state in its working directory


class DamagedStateError(OutreachError):
    """A pipeline's dlt state file cannot be read."""


def state_problem(name: str, root: Path) -> str | None:
    """One line when pipeline `name`'s dlt state file under `root` exists and is not readable JSON text."""
    path = root / name / STATE_FILE
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"the dlt state file {path} cannot be read ({type(exc).__name__}): fix its permissions"
    try:
        json.loads(text.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
        return (
            f"the dlt state file {path} is damaged (not JSON text): run `outreach sync --reset-state` "
            "(keeps the warehouse's data and reads the API again)"
        )
    return None


def damaged_states(root: Path) -> list[str]:
    """One line per pipeline of the sync under `root` (a warehouse's dlt working directory) whose state file
    is damaged."""
    folders = sorted(root.glob(constants.PIPELINE_PREFIX + "*")) if root.is_dir() else []
    return [line for line in (state_problem(f.name, root) for f in folders if f.is_dir()) if line]


def forget_state(root: Path) -> list[Path]:
    """Remove the working directories of the sync's pipelines under `root` (a warehouse's dlt working
    directory, never another warehouse's); return them.

    The caller holds the warehouse lock, so no run of this warehouse uses them meanwhile."""
    if not root.is_dir():
        return []
    removed = []
    for folder in sorted(root.glob(constants.PIPELINE_PREFIX + "*")):
        if folder.is_dir():
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
