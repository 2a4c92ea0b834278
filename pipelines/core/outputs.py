"""Files a command writes for its user (the dashboard, the docs site): written over only where the file there is
one such a command wrote, so a mistaken output path never replaces the warehouse or a page of the user's own."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path


def replaceable(path: Path, ours: Callable[[bytes], bool], head: int = 4096) -> bool:
    """Whether `path` may be written over: it is not there, or it is a regular file that is empty or whose first
    `head` bytes pass `ours`. Never what is not a regular file, unread: a named pipe (`/dev/stdout` in a pipeline)
    blocked the read for ever, and the atomic write that follows renames its file over the path, which replaced
    `/dev/null` itself with the page. OSError when it cannot be read."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as handle:
            start = handle.read(head)
    except FileNotFoundError:
        return True
    return not start or ours(start)


def through_links(path: Path) -> Path:
    """The file a write to `path` means: a symbolic link's target (made when it dangles), `path` otherwise. The
    write renames its temporary file over the path, which put the page in place of a link (a site's
    `current/report.html` pointing into a release) rather than into the file it names."""
    return Path(os.path.realpath(path))
