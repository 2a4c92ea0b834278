"""A server we start in a process of its own (the sandbox, the temporary Prefect server) ends with the process
that started it.

Its owner stops it on the way out, Ctrl-C included; the server runs in a session of its own so that a terminal's
Ctrl-C reaches the owner only, and the server serves until then. But an owner that cannot stop it (SIGKILL, a
second Ctrl-C that exits at once, a crash) would leave it running, holding a port and memory, with no one to
stop it: so the server watches its parent, and stops as if sent SIGTERM once the parent is gone.
"""

from __future__ import annotations

import os
import signal
import threading
import time

POLL_S = 0.5  # how often the parent is looked at
GRACE_S = 10.0  # then the server is ended however far its own shutdown got


def exit_with_parent() -> None:
    """From now on, SIGTERM this process once the process that started it is gone (its parent pid changes)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(GRACE_S)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()
