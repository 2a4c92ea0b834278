"""`outreach serve` as a user runs it with no Prefect settings: a subprocess, read its output,
use the command it prints from another process, stop it with Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import httpx
import psutil
from doc_blocks import as_run_here, doc_block
from loopback import LoopbackServer, json_answer
from process_output import ProcessOutput

OUTREACH = str(Path(sys.executable).with_name("outreach"))
WHEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def _temp_homes(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("outreach-prefect-*")}


def _project_dir(tmp_path: Path, sandbox: Any) -> tuple[Path, list[dict[str, Any]]]:
    """A working directory with .dlt/ settings pointing at the sandbox (one read key per workspace)."""
    keys: dict[str, dict[str, Any]] = {}
    for entry in sandbox.keys():
        if entry["level"] == "read":
            keys.setdefault(entry["workspace_id"], entry)
    home = tmp_path / "project"
    (home / ".dlt").mkdir(parents=True)
    (home / ".dlt" / "config.toml").write_text(
        f'[sources.outreach]\nbase_url = "{sandbox.base_url}"\nrate_limit_per_minute = 100000\n'
    )
    quoted = ", ".join(f'"{k["key"]}"' for k in keys.values())
    (home / ".dlt" / "secrets.toml").write_text(f"[sources.outreach]\napi_keys = [{quoted}]\n")
    return home, list(keys.values())


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child: SIGINT's default disposition, as a terminal gives it. A test run started in the
    background of a non-interactive shell (`make test &`) inherits SIGINT ignored, and Python then never
    turns Ctrl-C into KeyboardInterrupt, so `outreach serve` would rightly keep running."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _completed_run(api_url: str, name: str, timeout: float) -> dict[str, Any]:
    """Wait for a flow run called ``name`` to reach a final state; return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = httpx.post(f"{api_url}/flow_runs/filter", json={"limit": 50, "offset": 0}, timeout=10)
        response.raise_for_status()
        for run in response.json():
            if run["name"] == name and run["state_type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                return dict(run)
        time.sleep(1.0)
    raise AssertionError(f"flow run {name!r} did not finish within {timeout:.0f} s")


def test_serve_without_prefect_settings_shows_schedules_next_runs_and_a_working_run_command(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    home, keys = _project_dir(tmp_path, sandbox)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SOURCES__", "DESTINATION__"))}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # the user's own home; the server gets a temporary one
    tmp = tmp_path / "tmp"  # serve's TMPDIR: its temporary Prefect home goes here, apart from other tests'
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    # flows/README.md's block, as written (``.venv/bin/`` is this interpreter's bin directory)
    command = shlex.split(as_run_here(doc_block("flows/README.md", "serve"), Path(OUTREACH).parent), comments=True)
    assert command == [OUTREACH, "serve"], command
    serve = subprocess.Popen(
        command, cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )  # fmt: skip
    output = ProcessOutput(serve)
    try:
        output.wait_for("Stop with Ctrl-C.", timeout=240)
        text = "\n".join(output.lines)
        rows = {name: next(line for line in output.lines if f"sync-all/{name} " in line) for name in ("quick", "full")}
        assert "*/15 * * * * (UTC)" in rows["quick"] and "0 2 * * * (UTC)" in rows["full"]
        now = datetime.now(UTC)
        quick_runs = [
            datetime.strptime(m, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC) for m in WHEN.findall(rows["quick"])
        ]
        full_runs = [datetime.strptime(m, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC) for m in WHEN.findall(rows["full"])]
        assert len(quick_runs) == 3 and len(full_runs) == 3, text
        assert all(r.minute % 15 == 0 and r > now for r in quick_runs), rows["quick"]
        assert all((r.hour, r.minute) == (2, 0) for r in full_runs), rows["full"]
        assert (quick_runs[1] - quick_runs[0]).total_seconds() == 900

        # The printed command, run as written from another shell (no Prefect settings, another directory).
        command = next(line.strip() for line in output.lines if "deployment run 'sync-all/quick'" in line)
        api_url = re.search(r"PREFECT_API_URL=(\S+)", command).group(1)  # type: ignore[union-attr]
        triggered = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env={**env, "COLUMNS": "200"},
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert triggered.returncode == 0, triggered.stdout + triggered.stderr
        run = _completed_run(api_url, "sync-all-quick", timeout=240)
        assert run["state_type"] == "COMPLETED", run["state"]

        with duckdb.connect(str(home / "data" / "outreach.duckdb"), read_only=True) as con:
            loaded = {
                row[0]
                for row in con.execute("select distinct workspace_id from outreach.outreach.workspaces").fetchall()
            }
        assert loaded == {k["workspace_id"] for k in keys}
        server_port = int(api_url.split(":")[2].split("/")[0])
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(timeout=120)  # it pauses the schedules, stops the runner and its server
        finally:
            if serve.poll() is None:
                serve.kill()
        output.join()
    text = "\n".join(output.lines)
    assert serve.returncode == 0, text[-3000:]
    for bad in ("ERROR", "Traceback", "leaked", "telemetry"):
        assert bad not in text, f"{bad!r} in the output of outreach serve:\n{text[-4000:]}"
    listening = [
        c
        for c in psutil.net_connections(kind="tcp")
        if c.laddr and c.laddr.port == server_port and c.status == psutil.CONN_LISTEN
    ]
    assert not listening, "the temporary Prefect server still listens after outreach serve stopped"
    assert not _temp_homes(tmp), "outreach serve left its temporary Prefect home behind"


def test_serve_with_a_prefect_api_that_does_not_answer_says_so_in_one_line(tmp_path: Path) -> None:
    """It was `error: ConnectError: [Errno 111] Connection refused`, naming neither the URL nor the setting."""
    with socket.socket() as closed:  # a port nothing listens on: bound, never listening
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/api"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        result = subprocess.run(
            [OUTREACH, "serve"], env={**env, "PREFECT_API_URL": url}, cwd=tmp_path, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [
        f"error: the Prefect API at {url} (PREFECT_API_URL) does not answer ([Errno 111] Connection refused): start "
        "that server, or unset PREFECT_API_URL to use a temporary local one"
    ]


def test_serve_with_a_prefect_api_url_at_another_server_says_it_is_no_prefect_api(tmp_path: Path) -> None:
    """It was 'does not answer (Client error '404 Not Found' for url ... - Response: {...} - For more information
    check: https://developer.mozilla.org/...)': the server there answers, and is not Prefect's."""
    with LoopbackServer(lambda method, path, query: json_answer(404, {"message": "no such endpoint"})) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        result = subprocess.run(
            [OUTREACH, "serve"], env={**env, "PREFECT_API_URL": server.url + "/api"}, cwd=tmp_path,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [
        f"error: the server at {server.url}/api (PREFECT_API_URL) is no Prefect API: it answered 404 on /health; "
        "point PREFECT_API_URL at a Prefect server's API (it ends in /api), or unset it"
    ]
