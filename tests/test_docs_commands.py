"""The docs are true: every shell block of the checked documents is run as written by a test, or marked
with the reason it is not (tests/doc_blocks.py), and every relative link in the repository's markdown
points at a file that exists.

The blocks run here execute in a temp directory (a newcomer's working directory) against a `tiny`
sandbox over loopback: ``.venv/bin/`` is this interpreter's bin directory, ``<your-service>``'s URL is
the sandbox's, ``<key>`` a read key. dlt's home is a temp dir too (``DLT_DATA_DIR``, where dlt keeps
``pipelines/``: ``~/.dlt``, or ``/var/dlt`` as root) and the client's pacing is off
(``SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE=0``: the sandbox does not limit), set in the environment
only, never in the commands.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from doc_blocks import CHECKED_DOCS, ROOT, as_run_here, blocks, doc_block

BIN = Path(sys.executable).parent
TESTS = ROOT / "tests"
SERVICE_URL = "https://<your-service>/api/v1"


# ---- the mechanism: every command block is run or marked -------------------------------------------------


def _tags_read_by_tests() -> set[str]:
    """Quoted names in the test modules that read blocks with ``doc_block`` (this file included): a tag
    counts as run when a module that runs blocks names it."""
    found: set[str] = set()
    for test in TESTS.rglob("test_*.py"):
        text = test.read_text()
        if "doc_block(" in text:
            found.update(re.findall(r"""["']([\w.-]+)["']""", text))
    return found


def test_every_shell_block_of_the_checked_docs_is_run_by_a_test_or_marked_with_a_reason() -> None:
    read = _tags_read_by_tests()
    problems = []
    seen_tags: dict[str, str] = {}
    for path in CHECKED_DOCS:
        for block in blocks(path):
            where = f"{block.path}:{block.line}"
            if not block.language:
                problems.append(f"{where}: a fence without a language (say `sh` for commands, `text` for output)")
            elif block.is_shell and block.marker is None:
                problems.append(f"{where}: shell block neither <!-- tested: TAG --> nor <!-- not run: REASON -->")
            if block.marker == "tested":
                if block.value in seen_tags:
                    problems.append(f"{where}: tag {block.value!r} also used at {seen_tags[block.value]}")
                seen_tags[block.value] = where
                if block.value not in read:
                    problems.append(f"{where}: no test calls doc_block(..., {block.value!r})")
            if block.marker == "not run" and len(block.value) < 15:
                problems.append(f"{where}: <!-- not run: ... --> needs a reason, got {block.value!r}")
    assert not problems, "\n".join(problems)


def test_the_mechanism_sees_the_blocks_it_checks() -> None:
    """The parser finds the known blocks: the check above cannot pass by seeing nothing."""
    shell = [b for path in CHECKED_DOCS for b in blocks(path) if b.is_shell]
    assert len(shell) >= 10
    assert {b.value for b in shell if b.marker == "tested"} >= {"real-service", "deploy", "worker", "run", "serve"}


# ---- relative links --------------------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings."""
    anchors = set()
    for heading in re.findall(r"^#+\s+(.*)$", path.read_text(), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_every_relative_link_in_the_markdown_points_at_a_file_in_the_repository() -> None:
    files = _markdown_files()
    assert any(f.name == "README.md" for f in files) and any(f.name == "DESIGN.md" for f in files)
    broken = []
    for doc in files:
        text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.MULTILINE | re.DOTALL)
        for target in _LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                if target.startswith("#") and target[1:] not in _anchors(doc):
                    broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
                continue
            path, _, anchor = target.partition("#")
            resolved = (doc.parent / path).resolve()
            if not resolved.exists() or ROOT not in (resolved, *resolved.parents):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file in the repository)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_nothing_in_the_repository_points_outside_it_at_shared() -> None:
    """The design and the API's description live in docs/; a clone has no ../shared/."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    hits = []
    for name in listed:
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".md", ".py", ".toml", ".yaml", ".yml", ".sql", ""}:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.search(r"(\.\./|/work/|\b)shared/(DESIGN|api-spec|STYLE)", line):
                hits.append(f"{name}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)


# ---- the blocks, run --------------------------------------------------------------------------------------


def _user_env(home: Path) -> dict[str, str]:
    """A newcomer's shell: none of our settings, dlt's home in the test's directory, pacing off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DESTINATION__", "PREFECT_", "DLT_"))}
    env.update(
        HOME=str(home), DLT_DATA_DIR=str(home / "dlt"), SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0", COLUMNS="200"
    )
    return env


def _run(script: str, cwd: Path, env: dict[str, str], timeout: float = 240) -> str:
    """Run a block with ``bash -e`` as pasted into a shell; its output (stdout and stderr)."""
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"block failed ({done.returncode}):\n{script}\n{output[-4000:]}"
    return output


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    from sandbox.server import SandboxServer

    server = SandboxServer(scale="tiny", rate_limit=0)
    server.start()
    yield server
    server.stop()


def _read_keys(sandbox: Any) -> list[dict[str, Any]]:
    """One read (or else rw admin) key per workspace."""
    keys: dict[str, dict[str, Any]] = {}
    for entry in sorted(sandbox.keys(), key=lambda e: e["level"] != "read"):
        if entry["role"] == "admin":
            keys.setdefault(entry["workspace_id"], entry)
    return list(keys.values())


def _api_total(sandbox: Any, key: str, path: str) -> int:
    answer = httpx.get(f"{sandbox.base_url}{path}", params={"per_page": 1}, headers={"Authorization": f"Bearer {key}"})
    answer.raise_for_status()
    return int(answer.json()["meta"]["total"])


def _rows(path: Path, sql: str) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        row = con.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def test_readme_real_service_block_syncs_builds_documents_queries_and_reports(sandbox: Any, tmp_path: Path) -> None:
    key = _read_keys(sandbox)[0]
    script = as_run_here(
        doc_block("README.md", "real-service"),
        BIN,
        {"make setup\n": "", SERVICE_URL: sandbox.base_url, "<key>": key["key"]},
    )
    output = _run(script, tmp_path, _user_env(tmp_path / "home"))

    # `outreach check`: the settings' origins, the key's workspace, the warehouse; the key masked
    assert "env SOURCES__OUTREACH__API_KEY" in output and "all checks passed" in output, output[-4000:]
    assert f"workspace '{key['workspace_name']}'" in output, output[-4000:]
    assert "the warehouse's own (.<stem>_dlt beside a DuckDB file)" in output  # dlt's working dirs, per warehouse
    assert (tmp_path / "data" / ".outreach_dlt").is_dir()
    # `outreach status` after the sync: the workspace's full run, ok
    status = output.partition("outreach status:")[2]
    assert key["workspace_name"] in status and " full " in status and " ok " in status, output[-4000:]
    data = tmp_path / "data"
    campaigns = _api_total(sandbox, key["key"], "/campaigns")
    assert (
        _rows(data / "outreach.duckdb", "select count(*) from outreach.outreach.campaigns where _dlt_valid_to is null")
        == campaigns
    )
    # `outreach models` published the BI file the query reads; the query printed one row per campaign.
    assert _rows(data / "outreach_bi.duckdb", "select count(*) from reporting.campaign_performance") == campaigns
    with duckdb.connect(str(data / "outreach_bi.duckdb"), read_only=True) as con:
        names = [r[0] for r in con.execute("select campaign_name from reporting.campaign_performance").fetchall()]
    assert all(name[:15] in output for name in names), output[-3000:]
    assert (data / "docs" / "index.html").stat().st_size > 10_000  # `outreach docs`: dbt's static site
    report = (data / "report.html").read_text()
    assert "<html" in report.lower() and "plotly" in report.lower()  # `outreach report`: the dashboard
    assert key["key"] not in output


def _pipeline_names(summary: str) -> list[str]:
    return re.findall(r"pipeline (outreach_[0-9a-f_]+)\)", summary)


def test_pipelines_readme_dlt_files_block_then_dlt_pipeline_info_finds_the_pipeline(
    sandbox: Any, tmp_path: Path
) -> None:
    key = _read_keys(sandbox)[0]
    env = _user_env(tmp_path / "home")
    script = as_run_here(
        doc_block("pipelines/README.md", "dlt-files"), BIN, {SERVICE_URL: sandbox.base_url, "<key>": key["key"]}
    )
    output = _run(script, tmp_path, env)
    assert (tmp_path / ".dlt" / "config.toml").is_file() and (tmp_path / ".dlt" / "secrets.toml").is_file()
    names = _pipeline_names(output)
    assert names == [f"outreach_{key['workspace_id'].replace('-', '_')}"], output[-3000:]
    assert _rows(tmp_path / "data" / "outreach.duckdb", "select count(*) from outreach.outreach.workspaces") == 1

    info = _run(
        as_run_here(doc_block("pipelines/README.md", "dlt-info"), BIN, {"outreach_<workspace_id>": names[0]}),
        tmp_path,
        env,
    )
    # the warehouse's own dlt working directory, beside it (never dlt's default, shared by every warehouse)
    assert f"Found pipeline {names[0]} in data/.outreach_dlt" in info, info
    assert "dataset_name: outreach" in info and "Resources in schema: outreach" in info, info
    assert names[0] in info.partition("found in data/.outreach_dlt")[2]  # --list-pipelines
    assert not (tmp_path / "home" / "dlt" / "pipelines" / names[0]).exists()


def test_pipelines_readme_env_block_syncs_two_workspaces_into_the_configured_warehouse(
    sandbox: Any, tmp_path: Path
) -> None:
    first, second = _read_keys(sandbox)[:2]
    script = as_run_here(
        doc_block("pipelines/README.md", "env-vars"),
        BIN,
        {SERVICE_URL: sandbox.base_url, "<key>": first["key"], "<key of another workspace>": second["key"]},
    )
    output = _run(script, tmp_path, _user_env(tmp_path / "home"))
    warehouse = tmp_path / "data" / "agency.duckdb"
    assert not (tmp_path / "data" / "outreach.duckdb").exists()  # SOURCES__OUTREACH__DUCKDB_PATH was honoured
    assert _rows(warehouse, "select count(distinct workspace_id) from agency.outreach.campaigns") == 2
    names = _pipeline_names(output)
    assert len(names) == 2 and len(set(names)) == 1, output[-3000:]  # one batch: both in one pipeline
    assert (tmp_path / "data" / ".dlt" / names[0]).is_dir()  # --pipelines-dir
    assert names[0] in output.partition("found in data/.dlt")[2]  # dlt pipeline --pipelines-dir ... --list-pipelines
    assert first["key"] not in output and second["key"] not in output
