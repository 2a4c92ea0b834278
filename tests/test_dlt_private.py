"""Pins the private dlt API in pipelines/dlt_private.py: fails loudly, naming dlt, when an upgrade changes it."""

from __future__ import annotations

from typing import Any

import dlt
import pytest


def _traces() -> Any:
    from dlt.common.configuration.utils import get_resolved_traces

    return get_resolved_traces()


def test_untraced_config_stops_dlt_logging_resolved_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.dlt_private import untraced_config

    monkeypatch.setenv("SOURCES__OUTREACH__PROBE_SETTING", "x")
    traces = _traces()
    assert hasattr(traces, "logging_enabled") and hasattr(traces, "all_traces"), (
        f"dlt {dlt.__version__} changed TraceLogContext: update pipelines/dlt_private.py"
    )
    traces.clear()
    assert dlt.config.get("sources.outreach.probe_setting") == "x"
    logged = len(traces.all_traces)
    assert logged >= 1, f"dlt {dlt.__version__} no longer logs resolved config: pipelines/dlt_private.py may go"
    with untraced_config():
        assert dlt.config.get("sources.outreach.probe_setting") == "x"
        assert traces.logging_enabled is False
    assert len(traces.all_traces) == logged, f"dlt {dlt.__version__}: untraced_config no longer stops trace logging"
    assert traces.logging_enabled is True
