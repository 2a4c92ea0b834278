"""Paths and commands printed for the user to type: exactly what works from their shell."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def command(name: str) -> str:
    """An executable of this installation (``outreach``, ``prefect``), as typed: bare if PATH finds this one."""
    script = Path(sys.executable).with_name(name)
    found = shutil.which(name)
    if found and Path(found).resolve() == script.resolve():
        return name
    return shlex.quote(shown_path(script))
