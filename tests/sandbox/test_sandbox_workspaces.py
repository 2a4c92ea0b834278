"""`--workspaces N`: the default two unchanged, every workspace its own keys, secret and data, and the 500 target."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sandbox_fingerprint import digest, workspace_view

from bench.sandbox_start import vm_hwm_mb
from pipelines.events import spool_reader
from receiver.server import ReceiverServer
from sandbox.seed import WORKSPACES, extra_workspace_name
from sandbox.server import SandboxProcess

# Digests of everything the API shows at seed 7 with the default two workspaces, taken on the code before
# `--workspaces` existed: at the start, after advancing one day, then three more hours.
BEFORE_WORKSPACES = {
    "tiny": (
        "7f9466b76bfd3f2f106292ee4021104e5ebfc5470269d22cc2c7d9f00557cde6",
        "9ac10a63e7987db67dff6268547a19767197fdeec378e4b16c89d86df42a7a4b",
        "ac61dc77fa97ae27755cfd2dfc189327b813458389f21478e94ecbc3aaccb4c7",
    ),
    "small": (
        "163338313e36ecb8da5809fe74f6564be6c8a4caeaf86a9b0383d1c4e08b8d86",
        "85642af48787f4e4ee40caaadb278fbe6c81a08a9a0965310e786755326c6a5d",
        "5e4fb32e4a2e3b332a4d1f354c14a3dedf97152ca480187965f6b957c4ba00d4",
    ),
}


def _by_workspace(keys: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for k in keys:
        out.setdefault(k["workspace_id"], []).append(k)
    return out


def _key(keys: list[dict[str, Any]], level: str = "rw", role: str = "admin") -> str:
    return next(k["key"] for k in keys if k["level"] == level and k["role"] == role)


def _client(sb: Any, key: str) -> httpx.Client:
    return httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.mark.parametrize("scale", ["tiny", "small"])
def test_default_two_workspaces_show_exactly_the_data_of_before(make_sandbox: Any, scale: str) -> None:
    sb = make_sandbox(scale=scale, rate_limit=0)
    got = [digest(sb)]
    sb.advance(86_400)
    got.append(digest(sb))
    sb.advance(3 * 3600)
    got.append(digest(sb))
    assert tuple(got) == BEFORE_WORKSPACES[scale]


def test_more_workspaces_never_change_earlier_ones(make_sandbox: Any) -> None:
    """Workspaces 1-2 are the default's for any N >= 2, before and after advances; workspace k depends on (seed, k)."""
    three, four = (
        make_sandbox(scale="tiny", rate_limit=0, workspaces=3),
        make_sandbox(scale="tiny", rate_limit=0, workspaces=4),
    )
    one = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    assert digest(three, 2) == BEFORE_WORKSPACES["tiny"][0]
    assert digest(one) == digest(three, 1)  # one workspace: the default's first, at the start
    assert len(_by_workspace(one.keys())) == 1
    three.advance(86_400)
    four.advance(86_400)
    assert digest(three, 2) == BEFORE_WORKSPACES["tiny"][1]
    assert digest(four, 3) == digest(three)


def test_fifty_workspaces_each_with_its_own_keys_secret_and_data(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=50)
    keys = sb.keys()
    groups = _by_workspace(keys)
    assert len(groups) == 50
    names = [g[0]["workspace_name"] for g in groups.values()]
    assert len(set(names)) == 50 and names[:2] == ["Northwind Growth", "Bluebird Studio"]
    assert names[2:] == [extra_workspace_name(k)[0] for k in range(2, 50)]
    assert len({g[0]["signing_secret"] for g in groups.values()}) == 50
    assert len({k["key"] for k in keys}) == len(keys) == 2 * 50 + 1
    for i, group in enumerate(groups.values()):
        assert len({k["signing_secret"] for k in group}) == 1
        expected = Counter({("rw", "admin"): 1, ("read", "admin"): 1}) + Counter(
            {("rw", "former_admin"): 1} if i == 0 else {}
        )
        assert Counter((k["level"], k["role"]) for k in group) == expected

    first = workspace_view(sb.base_url, _key(groups[next(iter(groups))]))
    campaigns: dict[str, set[str]] = {}
    for i, (ws_id, group) in enumerate(groups.items()):
        for level in ("rw", "read"):
            with _client(sb, _key(group, level)) as c:
                account = c.get("/account").json()["data"]
                assert (
                    account["workspace"]["id"] == ws_id and account["workspace"]["name"] == group[0]["workspace_name"]
                )
        with _client(sb, _key(group)) as c:
            camps = c.get("/campaigns", params={"per_page": 100}).json()["data"]
            campaigns[ws_id] = {x["id"] for x in camps}
            mailboxes = c.get("/email-accounts").json()["data"]
            domain = WORKSPACES[i][2] if i < 2 else extra_workspace_name(i)[1]
            assert mailboxes and all(m["email"].endswith("@" + domain) for m in mailboxes)
            if i >= 2:  # "one workspace of the scale" = the first workspace's size
                assert len(camps) == len(first["campaigns"]) == 2
                assert (
                    sum(x["stats"]["total_leads"] for x in camps) == sum(len(v) for v in first["leads"].values()) == 200
                )
                assert len(mailboxes) == len(first["mailboxes"]) == 2
                assert sorted(x["name"] for x in camps) == sorted(x["name"] for x in first["campaigns"])  # names repeat
    everything = set().union(*campaigns.values())
    assert len(everything) == sum(len(ids) for ids in campaigns.values()) == 2 + 1 + 48 * 2  # no campaign in two
    ws_ids = list(groups)
    for i, ws_id in enumerate(ws_ids):  # each key sees only its own workspace: a neighbour's campaign is a 404
        neighbour = min(campaigns[ws_ids[(i + 1) % len(ws_ids)]])
        with _client(sb, _key(groups[ws_id], "read")) as c:
            assert c.get(f"/campaigns/{neighbour}").status_code == 404
            assert c.get("/replies", params={"campaign_id": neighbour}).status_code == 422


def test_rate_limits_stay_per_key_across_workspaces(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=2, workspaces=5)
    groups = list(_by_workspace(sb.keys()).values())
    with _client(sb, _key(groups[3])) as busy:
        assert [busy.get("/account").status_code for _ in range(3)] == [200, 200, 429]
    for group in groups:
        for level in ("rw", "read"):
            if group is groups[3] and level == "rw":
                continue
            with _client(sb, _key(group, level)) as c:
                assert c.get("/account").status_code == 200


def test_a_later_workspace_signs_deliveries_with_its_own_secret(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=6, insecure_hooks=True)
    groups = list(_by_workspace(sb.keys()).values())
    mine, other = groups[4], groups[5]
    secrets = {g[0]["workspace_id"]: g[0]["signing_secret"] for g in (mine, other)}
    with ReceiverServer(signing_secret=secrets, spool_dir=tmp_path / "spool") as receiver:
        with _client(sb, _key(mine)) as c:
            for event in ("lead.opened", "lead.replied", "lead.clicked"):
                assert c.post("/hooks", json={"event": event, "target_url": receiver.url}).status_code == 201
        sb.advance(2 * 86_400)
        deliveries = sb.wait_deliveries(timeout=60)
    assert deliveries and all(d["status"] == "delivered" for d in deliveries)
    snap = spool_reader.snapshot(tmp_path / "spool")
    records = [r for f in (*snap.sealed, *snap.live) for r in spool_reader.read_records(f)]
    assert len(records) == len(deliveries)
    assert {r["workspace_id"] for r in records} == {mine[0]["workspace_id"]}


def test_five_hundred_tiny_workspaces_start_in_a_minute_under_two_gigabytes() -> None:
    started = time.perf_counter()
    with SandboxProcess(scale="tiny", rate_limit=0, workspaces=500, start_timeout=120) as sb:
        elapsed = time.perf_counter() - started
        assert sb.pid is not None
        keys = sb.keys()
        peak = vm_hwm_mb(sb.pid)
        last = keys[-1]
        with _client(sb, last["key"]) as c:
            assert c.get("/account").json()["data"]["workspace"]["id"] == last["workspace_id"]
    assert len({k["workspace_id"] for k in keys}) == 500
    assert elapsed < 60, f"500 tiny workspaces took {elapsed:.1f} s to start"
    assert peak < 2048, f"500 tiny workspaces peaked at {peak:.0f} MB"
    print(json.dumps({"workspaces": 500, "start_s": round(elapsed, 1), "peak_rss_mb": round(peak)}))


def test_outreach_sandbox_command_takes_workspaces() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "sandbox",
            "--scale",
            "tiny",
            "--workspaces",
            "3",
            "--port",
            "0",
            "--rate-limit",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://\S+?)/api/v1", line)
        assert match, line
        assert "3 workspaces" in line
        keys = httpx.get(match.group(1) + "/_sandbox/keys", timeout=10).json()["data"]
        assert len({k["workspace_id"] for k in keys}) == 3 and len(keys) == 7
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    refused = subprocess.run(
        [sys.executable, "-m", "flows.cli", "sandbox", "--workspaces", "0"], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode != 0 and "--workspaces" in refused.stderr
