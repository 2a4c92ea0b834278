"""Files a command writes for its user (the dashboard, the docs site): written over only where the file there is
one such a command wrote, so a mistaken output path never replaces the warehouse or a page of the user's own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def replaceable(path: Path, ours: Callable[[bytes], bool], head: int = 4096) -> bool:
    """Whether `path` may be written over: it is not there, it is empty, or its first `head` bytes pass `ours`.
    OSError when it cannot be read."""
    try:
        with path.open("rb") as handle:
            start = handle.read(head)
    except FileNotFoundError:
        return True
    return not start or ours(start)
