"""A minimal keep-alive HTTP/1.1 load client: many POSTs over a few connections.

Lighter than httpx, so a burst measures the server, not the client. Used by the receiver
benchmark and by the receiver's burst tests.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

Request = tuple[bytes, dict[str, str]]  # body, headers


async def _worker(host: str, port: int, path: str, jobs: asyncio.Queue[tuple[int, Request]], out: list[int]) -> None:
    """One keep-alive connection posting queued requests; records each response's status."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while True:
            try:
                index, (body, headers) = jobs.get_nowait()
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


def post_burst(url: str, requests: list[Request], *, concurrency: int = 32) -> tuple[float, list[int]]:
    """POST every request to `url` over `concurrency` connections; (seconds, status per request)."""
    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path or "/"
    statuses = [0] * len(requests)

    async def run() -> float:
        jobs: asyncio.Queue[tuple[int, Request]] = asyncio.Queue()
        for item in enumerate(requests):
            jobs.put_nowait(item)
        started = time.perf_counter()
        await asyncio.gather(*(_worker(host, port, path, jobs, statuses) for _ in range(concurrency)))
        return time.perf_counter() - started

    return asyncio.run(run()), statuses
