"""The registry through which the subflows of one flow run sync each workspace once (pipelines/sync/claims.py)."""

from __future__ import annotations

from pipelines.api.accounts import Workspace
from pipelines.core.fanout import map_in_threads
from pipelines.sync.claims import one_sync_per_workspace, take


def _ws(key: str, workspace_id: str) -> Workspace:
    return Workspace(index=0, api_key=key, account={"workspace": {"id": workspace_id, "name": f"ws {workspace_id}"}})


def test_a_workspace_is_taken_once_per_run_and_again_by_the_key_that_took_it() -> None:
    read, rw, other = _ws("k-read", "w1"), _ws("k-rw", "w1"), _ws("k-other", "w2")
    assert take([read, rw]) == ([read, rw], [])  # outside a run's block nothing is left out
    with one_sync_per_workspace():
        assert take([read]) == ([read], [])
        assert take([rw, other]) == (
            [other],
            ["workspace ws w1 (w1) is synced once in this run, with another of its keys"],
        )
        assert take([read]) == ([read], [])  # a retried task syncs what it took
        # the threads a run starts with a copy of its context share its registry
        assert map_in_threads(lambda ws: take([ws])[0], [rw, _ws("k-3", "w3")], workers=2, name="t") == [
            [],
            [_ws("k-3", "w3")],
        ]
    with one_sync_per_workspace():  # the next run starts afresh
        assert take([rw]) == ([rw], [])
