"""Prefect's concurrency limits: runs never overlap, and writer tasks are tagged.

``sync_all`` holds one slot of the global concurrency limit ``outreach-sync``.

Each deployment in prefect.yaml also has ``concurrency_limit: 1``, but that is per deployment:
it keeps two quick runs apart, not a quick run and the nightly full run. The global limit
(declared in prefect.yaml under ``definitions.global_concurrency_limits`` and created by
``outreach serve``; on a work pool, create it once with
``prefect gcl create outreach-sync --limit 1``) covers both, on any machine. Where it does
not exist (tests, the demo, an ad-hoc run) there is nothing to overlap with and the run
proceeds without it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prefect.client.orchestration import get_client
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectNotFound

SYNC_LIMIT = "outreach-sync"
#: Tasks that write the warehouse carry this tag; a tag concurrency limit of 1 on it (prefect.yaml,
#: created by `outreach serve`) serialises DuckDB writers across machines. The warehouse lock itself
#: is `pipelines.warehouse.lock`, which every writer takes, with or without Prefect.
WRITER_TAG = "outreach-warehouse-writer"

logger = logging.getLogger(__name__)


def limit_exists(name: str) -> bool:
    """Whether the Prefect server holds a global concurrency limit called ``name``."""
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            return False
    return True


@contextmanager
def exclusive_sync_run(name: str = SYNC_LIMIT) -> Iterator[bool]:
    """Hold a slot of ``name`` while a sync runs, if that limit exists; yields whether it was held."""
    if not limit_exists(name):
        logger.debug("global concurrency limit %r not defined: running without it", name)
        yield False
        return
    with concurrency(name, occupy=1, strict=True):
        yield True
