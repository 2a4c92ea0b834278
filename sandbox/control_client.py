"""The sandbox's control plane (`/_sandbox/...`) over HTTP: what SandboxServer and SandboxProcess share."""

from __future__ import annotations

import time
from typing import Any

import httpx


class ControlClient:
    """Control-plane helpers shared by SandboxServer and SandboxProcess (need `.url`)."""

    url: str
    _http: httpx.Client | None = None

    @property
    def base_url(self) -> str:
        return self.url + "/api/v1"

    @property
    def http(self) -> httpx.Client:
        """One HTTP client for every control call: each new client builds a TLS context (tens of ms of CPU),
        which the tests' polling loops paid on every call."""
        if self._http is None:
            self._http = httpx.Client(timeout=600)
        return self._http

    def _close_http(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _call(self, method: str, path: str, json: Any = None) -> Any:
        response = self.http.request(method, self.url + path, json=json)
        response.raise_for_status()
        return response.json()

    def keys(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/_sandbox/keys")["data"])

    def advance(self, seconds: float) -> str:
        return str(self._call("POST", "/_sandbox/clock", {"advance_seconds": seconds})["data"]["now"])

    def metrics(self) -> dict[str, Any]:
        return dict(self._call("GET", "/_sandbox/metrics")["data"])

    def reset_metrics(self) -> None:
        self._call("POST", "/_sandbox/metrics/reset")

    def set_faults(self, **kw: Any) -> dict[str, Any]:
        return dict(self._call("POST", "/_sandbox/faults", kw)["data"])

    def set_drift(self, **kw: bool) -> dict[str, bool]:
        """Schema drift from now on (`new_fields`, `unknown_enums`, `string_numbers`); no arguments turn it off."""
        return dict(self._call("POST", "/_sandbox/drift", kw)["data"])

    def set_malform(self, **kw: Any) -> dict[str, Any]:
        """Malformed records from now on (`null_id`, `timestamps`, `timestamp_fields`); no arguments turn it off."""
        return dict(self._call("POST", "/_sandbox/malform", kw)["data"])

    def set_rate_limit(self, per_minute: int) -> None:
        self._call("POST", "/_sandbox/rate_limit", {"per_minute": per_minute})

    def apply_scenario(self, name: str, parts: list[str] | None = None) -> dict[str, Any]:
        """Put the sandbox in a named scenario now (POST /_sandbox/scenario), all of it or `parts`."""
        body: dict[str, Any] = {"name": name} | ({"parts": parts} if parts else {})
        return dict(self._call("POST", "/_sandbox/scenario", body)["data"])

    def deliveries(self) -> dict[str, Any]:
        return dict(self._call("GET", "/_sandbox/hooks/deliveries"))

    def wait_deliveries(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait until no webhook delivery is pending; return the delivery records."""
        deadline = time.monotonic() + timeout
        while True:
            body = self.deliveries()
            if body["pending"] == 0 or time.monotonic() > deadline:
                return list(body["data"])
            time.sleep(0.05)

    def _wait_healthy(self, timeout: float, alive: Any = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise RuntimeError("the sandbox stopped while starting; see its error output")
            try:
                if self.http.get(self.url + "/_sandbox/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"the sandbox at {self.url} did not become healthy within {timeout:.0f} s")

    def __enter__(self) -> Any:
        self.start()  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()  # type: ignore[attr-defined]
