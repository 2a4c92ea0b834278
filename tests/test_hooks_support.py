"""Helpers for the webhook tests (no tests here): payloads, signed deliveries, loading the spool."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import dlt
import duckdb
import httpx

from pipelines.events import load_spool
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


def signed(body: bytes, *, secret: str = SECRET, ts: int | None = None, event: str | None = "lead.replied") -> dict[str, str]:
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _raw_worker(host: str, port: int, path: str, jobs: "asyncio.Queue[tuple[int, bytes, dict[str, str]]]", out: list[int]) -> None:
    """One keep-alive HTTP/1.1 connection posting queued bodies (lighter than httpx, so a
    burst measures the receiver, not the client)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while True:
            try:
                index, body, headers = jobs.get_nowait()
            except asyncio.QueueEmpty:
                return
            head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(body)}\r\n"
            head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            writer.write(head.encode() + body)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            out[index] = int(status_line.split()[1])
    finally:
        writer.close()


def burst(url: str, bodies: list[bytes], *, concurrency: int = 32, secret: str = SECRET) -> list[int]:
    """POST every body, signed, over `concurrency` keep-alive connections; status per body."""
    parts = httpx.URL(url)
    statuses = [0] * len(bodies)

    async def run() -> None:
        jobs: asyncio.Queue[tuple[int, bytes, dict[str, str]]] = asyncio.Queue()
        for i, body in enumerate(bodies):
            jobs.put_nowait((i, body, signed(body, secret=secret, event=json.loads(body)["event"])))
        await asyncio.gather(*(_raw_worker(parts.host, parts.port or 80, parts.path, jobs, statuses) for _ in range(concurrency)))

    asyncio.run(run())
    return statuses
