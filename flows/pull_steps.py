"""The pull step of every deployment in prefect.yaml: where a worker's flow run executes.

``prefect deploy`` would otherwise record the deploying machine's working directory
(``set_working_directory: /path/on/that/machine``), and a worker whose checkout lives elsewhere
could not run anything. This step is resolved on the worker, when the run starts: the run
executes in ``$OUTREACH_HOME`` if the worker's environment sets it, else in the checkout that
the worker's outreach-elt is installed from (``make setup`` installs it editable). That
directory's ``.dlt/`` holds the settings and keys, and ``data/`` the warehouse, as for
``outreach sync`` run there.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from pipelines.core.errors import ConfigError

logger = logging.getLogger(__name__)

HOME_VARIABLE = "OUTREACH_HOME"
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def outreach_home() -> Path:
    """``$OUTREACH_HOME``, else the checkout holding this package; raise a one-line error if neither fits."""
    explicit = os.environ.get(HOME_VARIABLE, "").strip()
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if not path.is_dir():
            raise ConfigError(
                f"{HOME_VARIABLE}={explicit} is not a directory on this worker: create it (with .dlt/ settings) "
                f"or point {HOME_VARIABLE} at the outreach-elt directory"
            )
        return path
    if not (PROJECT_ROOT / "prefect.yaml").is_file():
        raise ConfigError(
            f"outreach-elt is installed as a package here ({PROJECT_ROOT}), not from a checkout: set "
            f"{HOME_VARIABLE} in the worker's environment to the directory holding .dlt/ and data/"
        )
    return PROJECT_ROOT


def enter_outreach_home() -> dict[str, str]:
    """Pull step: change into :func:`outreach_home`; returns ``{"directory": ...}`` like Prefect's own step."""
    home = outreach_home()
    os.chdir(home)
    logger.info("flow run working directory: %s", home)
    return {"directory": str(home)}
