"""Route the libraries' loggers (dlt, pipelines, models) into Prefect's run logs.

Prefect copies the handlers of its ``prefect.extra`` logger onto every logger named in
``PREFECT_LOGGING_EXTRA_LOGGERS`` when it sets up logging at import time. We do the same in
code, so it works whatever the environment says, and we also export the variable so flow runs
that ``prefect serve`` starts in subprocesses do it themselves.
"""

from __future__ import annotations

import logging
import os

EXTRA_LOGGERS: tuple[str, ...] = ("dlt", "pipelines", "models")


def route_library_logs_to_prefect(names: tuple[str, ...] = EXTRA_LOGGERS) -> None:
    """Attach Prefect's run-log handlers to the given loggers (idempotent)."""
    from prefect.logging.configuration import ensure_logging_setup

    ensure_logging_setup()  # `import prefect` alone configures logging only once `prefect.main` loads

    wanted = set(os.environ.get("PREFECT_LOGGING_EXTRA_LOGGERS", "").replace(" ", "").split(","))
    wanted.discard("")
    os.environ["PREFECT_LOGGING_EXTRA_LOGGERS"] = ",".join(sorted(wanted | set(names)))
    # The same loggers also run outside flows: there they should log to the console only, without Prefect's
    # "no flow run id" warning on every line. Processes started from here (`prefect serve`'s flow runs) read
    # this before Prefect loads its settings; this process may have loaded them already, and then still warns
    # where it logs outside a run.
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")

    # Only Prefect's own handlers: a test runner (pytest) also hangs its capture handlers on every
    # non-propagating logger such as prefect.extra, and copied onto our propagating loggers they
    # would stay there and see every record twice.
    handlers = [h for h in logging.getLogger("prefect.extra").handlers if type(h).__module__.startswith("prefect.")]
    for name in names:
        logger = logging.getLogger(name)
        for handler in handlers:
            if handler not in logger.handlers:
                logger.addHandler(handler)
        if logger.level == logging.NOTSET and name != "dlt":
            # Our own INFO lines (workspace loaded, models built) belong in the run log; dlt keeps
            # the level .dlt/config.toml gives it ([runtime] log_level).
            logger.setLevel(logging.INFO)
