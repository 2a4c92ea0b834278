"""Helpers for the webhook tests (no tests here): payloads, signed deliveries, loading the spool."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import dlt
import duckdb
import httpx

from bench.http_burst import post_burst
from pipelines.events.loading import load_spool
from receiver.signature import sign

SECRET = "whsec-test-3f9a1c"


def payload(event: str = "lead.replied", **data: Any) -> dict[str, Any]:
    """A delivery body; unique unless `data` pins every field."""
    base: dict[str, Any] = {
        "lead_id": str(uuid.uuid4()),
        "email": "ada@example.com",
        "first_name": "Ada",
        "company": "Analytical",
        "campaign_id": str(uuid.uuid4()),
        "subject": "Re: hello",
        "reply_type": "interested",
        "reply": "Sounds good",
        "body": "Sounds good\n> hello",
    }
    base.update(data)
    return {"event": event, "created_at": "2026-03-02T10:00:00+00:00", "data": base}


def signed(
    body: bytes, *, secret: str = SECRET, ts: int | None = None, event: str | None = "lead.replied"
) -> dict[str, str]:
    stamp = str(int(time.time()) if ts is None else ts)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Service-Webhooks/1.0",
        "X-Service-Timestamp": stamp,
        "X-Service-Signature": sign(secret, stamp, body),
    }
    if event:
        headers["X-Service-Event"] = event
    return headers


def deliver(client: httpx.Client, url: str, body_obj: dict[str, Any], **kw: Any) -> httpx.Response:
    body = json.dumps(body_obj).encode()
    return client.post(url, content=body, headers=signed(body, event=body_obj.get("event"), **kw))


def make_pipeline(tmp_path: Path, name: str = "outreach_events") -> dlt.Pipeline:
    return dlt.pipeline(
        pipeline_name=name,
        destination=dlt.destinations.duckdb(str(tmp_path / "w.duckdb")),
        dataset_name="outreach",
        pipelines_dir=str(tmp_path / "dlt"),
    )


def load(tmp_path: Path, spool_dir: Path) -> int:
    return load_spool(make_pipeline(tmp_path), spool_dir)


def event_rows(tmp_path: Path, columns: str = "event_id, event, email, data") -> list[tuple[Any, ...]]:
    path = tmp_path / "w.duckdb"
    if not path.exists():
        return []
    with duckdb.connect(str(path), read_only=True) as con:
        exists = con.execute(
            "select count(*) from information_schema.tables where table_schema = 'outreach' and table_name = 'events'"
        ).fetchone()
        if not exists or not exists[0]:
            return []
        return con.execute(f"select {columns} from outreach.events order by event_id").fetchall()


def burst(url: str, bodies: list[bytes], *, concurrency: int = 32, secret: str = SECRET) -> list[int]:
    """POST every body, signed, over `concurrency` keep-alive connections; status per body."""
    requests = [(body, signed(body, secret=secret, event=json.loads(body)["event"])) for body in bodies]
    return post_burst(url, requests, concurrency=concurrency)[1]
