"""Hand the workspaces of one ``sync_all`` run out to a work pool: one flow run of the ``sync-batch/batch``
deployment per batch of key references (but the first, which the ``sync_all`` run syncs itself), so that every
worker polling the pool takes a share.

``sync_all`` does this only when it runs itself as a deployment run on a work pool and the batch
deployment is registered (``prefect deploy --all`` from prefect.yaml). Anywhere else (a direct call,
``outreach serve``, the demo, tests) it syncs the workspaces in its own process.

Each batch run is created with an idempotency key made of the parent run's id and the batch's number:
a client retry, or a retry of the parent, finds the run already created instead of starting a second
one, so every workspace is synced once per ``sync_all`` run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

log = logging.getLogger(__name__)

POLL_S = 2.0


@dataclass
class BatchOutcome:
    """A batch run as the parent sees it once it ended."""

    refs: list[str]
    flow_run_id: UUID
    flow_run_name: str
    ok: bool
    message: str


def split(refs: Sequence[str], size: int) -> list[list[str]]:
    """``refs`` in consecutive batches of at most ``size`` (at least 1)."""
    size = max(1, size)
    return [list(refs[i : i + size]) for i in range(0, len(refs), size)]


def batch_size_for(n_refs: int, batch_size: int | None, n_runs: int) -> int:
    """Workspaces per batch run: the given size, else ``n_refs`` spread over ``n_runs`` runs."""
    if batch_size:
        return max(1, batch_size)
    return max(1, -(-n_refs // max(1, n_runs)))


def hand_out_to(deployment_name: str | None) -> str | None:
    """The batch deployment to hand workspaces to, or None to sync them in this process.

    Only when this flow run is itself a deployment run on a work pool and ``deployment_name`` is
    registered on the server; a run served by ``outreach serve`` or called directly has no pool.
    """
    if not deployment_name:
        return None
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound
    from prefect.runtime import flow_run

    run_id = flow_run.get_id()
    if run_id is None:
        return None
    with get_client(sync_client=True) as client:
        this_run = client.read_flow_run(UUID(run_id))
        if this_run.deployment_id is None or not this_run.work_pool_name:
            return None
        try:
            client.read_deployment_by_name(deployment_name)
        except ObjectNotFound:
            log.warning("deployment %s is not registered: syncing every workspace in this run", deployment_name)
            return None
    return deployment_name


def start_batches(deployment_name: str, batches: Sequence[list[str]], parameters: dict[str, Any]) -> list[Any]:
    """Create one flow run of ``deployment_name`` per batch (linked to this run); returns the flow runs."""
    from prefect.deployments import run_deployment
    from prefect.runtime import flow_run

    parent = flow_run.get_id() or "adhoc"
    runs = []
    for number, refs in enumerate(batches, start=1):
        runs.append(
            run_deployment(
                deployment_name,
                parameters={**parameters, "key_refs": refs},
                flow_run_name=f"sync-batch-{parameters.get('mode', 'quick')}-{number}-of-{len(batches)}",
                idempotency_key=f"{parent}-batch-{number}-of-{len(batches)}",
                timeout=0,
            )
        )
    return runs


def wait_for(runs: Sequence[Any], batches: Sequence[list[str]], poll_s: float = POLL_S) -> list[BatchOutcome]:
    """Poll the batch runs until every one reached a final state; their outcomes in batch order."""
    from prefect.client.orchestration import get_client

    pending = {run.id: i for i, run in enumerate(runs)}
    outcomes: dict[int, BatchOutcome] = {}
    with get_client(sync_client=True) as client:
        while pending:
            for run_id, index in list(pending.items()):
                current = client.read_flow_run(run_id)
                state = current.state
                if state is None or not state.is_final():
                    continue
                ok = state.is_completed()
                message = "" if ok else (state.message or state.name or "failed")
                outcomes[index] = BatchOutcome(batches[index], run_id, current.name, ok, message)
                del pending[run_id]
            if pending:
                time.sleep(poll_s)
    return [outcomes[i] for i in range(len(runs))]
