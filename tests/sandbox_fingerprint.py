"""A digest of everything a sandbox's API shows, read over HTTP (to pin seeded data across changes)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx


def _pages(c: httpx.Client, path: str, per_page: int) -> list[Any]:
    out: list[Any] = []
    page = 1
    while True:
        body = c.get(path, params={"per_page": per_page, "page": page}).json()
        out += body["data"]
        if page >= body["meta"]["last_page"]:
            return out
        page += 1


def workspace_view(base_url: str, key: str) -> dict[str, Any]:
    """Account, campaigns, every recipient, stats, replies (with bodies) and mailboxes of one key's workspace."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
        campaigns = _pages(c, "/campaigns", 100)
        view: dict[str, Any] = {"account": c.get("/account").json()["data"], "campaigns": campaigns}
        view["leads"] = {x["id"]: _pages(c, f"/campaigns/{x['id']}/leads", 200) for x in campaigns}
        stats = {x["id"]: c.get(f"/campaigns/{x['id']}/stats").json()["data"] for x in campaigns}
        view["stats"] = stats
        replies = _pages(c, "/replies", 100)
        view["replies"] = replies
        view["bodies"] = [c.get(f"/replies/{r['id']}").json()["data"]["body"] for r in replies[:20]]
        view["mailboxes"] = c.get("/email-accounts").json()["data"]
    return view


def digest(sb: Any, workspaces: int | None = None) -> str:
    """sha256 over the keys listing and the view of the first `workspaces` workspaces (all by default)."""
    keys = sb.keys()
    order = list(dict.fromkeys(k["workspace_id"] for k in keys))[:workspaces]
    h = hashlib.sha256(json.dumps([k for k in keys if k["workspace_id"] in order], sort_keys=True).encode())
    for ws in order:
        key = next(k["key"] for k in keys if k["workspace_id"] == ws and k["level"] == "rw" and k["role"] == "admin")
        h.update(json.dumps(workspace_view(sb.base_url, key), sort_keys=True).encode())
    return h.hexdigest()
