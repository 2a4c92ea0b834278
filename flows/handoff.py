"""Hand a live object from one task to the next by a plain token, never as a task parameter.

Why: Prefect keeps the ``contextvars`` of the task in which one of its background services first
starts until the interpreter exits (``QueueService.start`` registers its ``drain`` as a shutdown
call of the global event loop thread, with a copy of the caller's context). The tag concurrency
service starts in the first task that carries a tag, i.e. the first load; a live dlt pipeline among
that task's parameters then outlives DuckDB's bindings, and every flow run process ended with ~40
lines of nanobind "leaked instance" warnings. With a token as the parameter nothing of DuckDB's is
pinned, and the process exits quietly (checked on the worker's output in ``tests/test_flows_workpool.py``, on
``outreach serve`` in ``tests/test_flows_serve.py`` and on the demo in ``tests/test_demo.py``).

The object lives in this process only, for as long as the ``with handed_over(...)`` block runs:
the receiving task runs inside it (retries included), in the same flow run process.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_objects: dict[str, Any] = {}
_lock = threading.Lock()


@contextmanager
def handed_over(obj: Any) -> Iterator[str]:
    """Register ``obj`` for the duration of the block; yield the token a task receives it by."""
    token = f"handoff-{uuid.uuid4().hex}"
    with _lock:
        _objects[token] = obj
    try:
        yield token
    finally:
        with _lock:
            _objects.pop(token, None)


def receive(token: str) -> Any:
    """The object registered under ``token`` (the caller's ``handed_over`` block is still running)."""
    with _lock:
        if token not in _objects:
            raise RuntimeError(
                f"{token} is not held in this process: this task runs only inside the flow run that hands it its input"
            )
        return _objects[token]
