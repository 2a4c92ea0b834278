"""Headless Chromium for the tests and benches: open a page, wait until it says it is drawn, collect trouble.

Drives the system's Chromium (Debian's ``chromium``, installed by ``devtools/system-deps.sh``)
through Playwright's Python API with ``executable_path``: Playwright's own browser downloads
are never used. Every launch gets a new, empty profile directory and the flags that keep
Chromium off the network (no background networking, component updates, sync or QUIC).

    with HeadlessChromium(tmp_path / "profile") as browser:
        page = browser.open(tmp_path / "report.html", ready="document.body.dataset.rendered === 'true'")
        assert page.console_errors == [] and page.outside_requests == []
        page.page.screenshot(path=tmp_path / "report.png", full_page=True)

A site that reads files beside its page (dbt's docs site reads manifest.json) opens with
``serve=True``: its directory is served on a loopback port until the browser closes, and only that
origin is allowed.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
_LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def chromium_path() -> str:
    """The Chromium executable, or an error naming how to install it (the tests never skip)."""
    found = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if not found:
        raise RuntimeError("Chromium not found: run `make system-deps` (apt-get install chromium)")
    return found


@dataclass
class OpenedPage:
    """A page that reached its ready condition, with what went wrong on the way."""

    page: Any  # playwright.sync_api.Page
    console_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)  # URLs answered with an HTTP error status
    seconds_to_ready: float = 0.0

    def evaluate(self, expression: str, arg: Any = None) -> Any:
        return self.page.evaluate(expression, arg)


class HeadlessChromium:
    """One headless Chromium with a fresh profile; ``open`` pages in it, then close it (a context manager)."""

    def __init__(self, profile_dir: Path, *, viewport: tuple[int, int] = (1400, 1000)) -> None:
        self.profile_dir = profile_dir
        self.viewport = viewport
        self._playwright: Any = None
        self._context: Any = None
        self._servers = ExitStack()

    def __enter__(self) -> Self:
        from playwright.sync_api import sync_playwright

        executable = chromium_path()
        if self.profile_dir.exists() and any(self.profile_dir.iterdir()):
            raise RuntimeError(f"browser profile {self.profile_dir} is not empty: give each launch a new directory")
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        self._playwright = sync_playwright().start()
        try:
            self._context = self._playwright.chromium.launch_persistent_context(
                str(self.profile_dir),
                executable_path=executable,
                headless=True,
                args=list(FLAGS),
                viewport={"width": self.viewport[0], "height": self.viewport[1]},
            )
        except BaseException:
            self._playwright.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._context is not None:
                self._context.close()
        finally:
            try:
                if self._playwright is not None:
                    self._playwright.stop()
            finally:
                self._servers.close()

    def open(
        self, target: Path, *, ready: str, timeout_s: float = 30, serve: bool = False, init_script: str = ""
    ) -> OpenedPage:
        """Open ``target`` and wait until the JS expression ``ready`` is true. ``init_script`` runs before the
        page's own scripts (to take away a browser feature, as an older browser lacks it).

        Every request that leaves the page's own origin (file://, or the loopback server with
        ``serve``) is aborted and recorded in ``outside_requests``; console errors and uncaught
        exceptions land in ``console_errors``, the URLs answered with an error status in ``failed_requests``.
        """
        page = self._context.new_page()
        opened = OpenedPage(page=page)
        page.on("console", lambda msg: opened.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: opened.console_errors.append(f"uncaught: {exc}"))
        page.on(
            "response", lambda response: opened.failed_requests.append(response.url) if response.status >= 400 else None
        )
        origin = self._servers.enter_context(_served(target.parent)) if serve else ""
        allowed = _LOCAL_SCHEMES + ((origin,) if origin else ())

        def gate(route: Any) -> None:
            url = route.request.url
            if url.startswith(allowed):
                route.continue_()
            else:
                opened.outside_requests.append(url)
                route.abort()

        page.route("**/*", gate)
        if init_script:
            page.add_init_script(init_script)
        url = f"{origin}/{target.name}" if origin else target.resolve().as_uri()
        started = time.perf_counter()
        page.goto(url, wait_until="load", timeout=timeout_s * 1000)
        page.wait_for_function(ready, timeout=timeout_s * 1000)
        opened.seconds_to_ready = time.perf_counter() - started
        return opened


@contextmanager
def _served(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free loopback port for the duration; yields its origin."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass
