"""One settings object, the dlt way, honoured by every command and flow; the warehouse
created in the configured DuckDB storage format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_sync_support import admin_keys, api_truth, assert_warehouse_equals_api
from typer.testing import CliRunner

from flows.cli import app
from pipelines.core.config import resolve_settings
from pipelines.core.errors import ConfigError

OUTREACH = str(Path(sys.executable).with_name("outreach"))


@pytest.fixture
def no_outreach_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("SOURCES__OUTREACH__") or name.startswith("OUTREACH__"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .dlt/ here
    return tmp_path


def test_settings_come_from_env_toml_and_explicit_values_in_that_order(no_outreach_env: Path, monkeypatch: Any) -> None:
    defaults = resolve_settings()
    assert (defaults.workers, defaults.batch_size, defaults.rate_limit_per_minute, defaults.duckdb_path) == (
        8,
        None,
        120,
        "data/outreach.duckdb",
    )
    assert (defaults.batch_size_for("full"), defaults.batch_size_for("quick")) == (25, 100)
    assert resolve_settings(batch_size=7).batch_size_for("quick") == 7  # a set size holds in both modes
    assert (defaults.destination, defaults.duckdb_storage_version, defaults.lock_timeout_s) == (
        "duckdb",
        "v1.0.0",
        600.0,
    )
    # .dlt/ of the working directory: dlt reads it once per process, so a fresh process reads it here
    (no_outreach_env / ".dlt").mkdir()
    (no_outreach_env / ".dlt" / "config.toml").write_text("[sources.outreach]\nworkers = 3\nbatch_size = 7\n")
    (no_outreach_env / ".dlt" / "secrets.toml").write_text('[sources.outreach]\napi_keys = ["k-one", "k-two"]\n')
    code = (
        "import json, sys\nfrom pipelines.core.config import resolve_settings\n"
        "s = resolve_settings(**json.loads(sys.argv[1]))\n"
        "print(json.dumps([s.workers, s.batch_size, s.api_key_list(), repr(s)]))\n"
    )

    def settings_in_a_process(explicit: dict[str, Any], **env: str) -> list[Any]:
        run_env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
        done = subprocess.run(
            [sys.executable, "-c", code, json.dumps(explicit)],
            env={**run_env, **env},
            cwd=no_outreach_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-1500:]
        return list(json.loads(done.stdout))

    assert settings_in_a_process({})[:3] == [3, 7, ["k-one", "k-two"]]
    env_keys = json.dumps(["k-env"])
    assert settings_in_a_process({}, SOURCES__OUTREACH__WORKERS="5", SOURCES__OUTREACH__API_KEYS=env_keys)[:3] == [
        5,
        7,
        ["k-env"],
    ]
    # explicit values (a CLI flag, a flow parameter) win; an unrelated bare variable is never taken for ours
    workers, batch, keys, shown = settings_in_a_process({"workers": 2}, BATCH_SIZE="99", API_KEY="someone-elses")
    assert (workers, batch) == (2, 7) and "someone-elses" not in keys
    assert "k-one" not in shown and "k-two" not in shown


def test_bad_settings_fail_in_one_line_naming_the_setting(no_outreach_env: Path, monkeypatch: Any) -> None:
    with pytest.raises(ConfigError, match="workers must be at least 1"):
        resolve_settings(workers=0)
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", "[not json")
    with pytest.raises(ConfigError, match="SOURCES__OUTREACH__API_KEYS is not a valid JSON list"):
        resolve_settings()
    monkeypatch.delenv("SOURCES__OUTREACH__API_KEYS")
    monkeypatch.setenv("SOURCES__OUTREACH__BATCH_SIZE", "many")
    with pytest.raises(ConfigError) as info:
        resolve_settings()
    # it was dlt's "Configured value for field `batch_size` cannot be coerced into type `<class 'int'>`"
    assert str(info.value) == (
        "[sources.outreach] batch_size (env SOURCES__OUTREACH__BATCH_SIZE) is not a whole number: set it to a whole "
        "number"
    )
    monkeypatch.delenv("SOURCES__OUTREACH__BATCH_SIZE")
    # DuckDB's options, as DuckDB takes them: they failed when the warehouse was opened, in DuckDB's words
    # ("Parser Error: Memory must have a number", or every version DuckDB knows), naming no setting
    for name, value, said in (
        (
            "DUCKDB_MEMORY_LIMIT",
            "lots",
            "duckdb_memory_limit is 'lots', not a size DuckDB takes, e.g. 64MB, 2GB or 50%",
        ),
        (
            "DUCKDB_STORAGE_VERSION",
            "v9.9",
            "duckdb_storage_version is 'v9.9', not a DuckDB storage version, e.g. v1.0.0",
        ),
    ):
        monkeypatch.setenv(f"SOURCES__OUTREACH__{name}", value)
        with pytest.raises(ConfigError) as info:
            resolve_settings()
        assert str(info.value).startswith(f"sources.outreach.{said}"), info.value
        monkeypatch.delenv(f"SOURCES__OUTREACH__{name}")
    assert resolve_settings(duckdb_memory_limit="50%", duckdb_storage_version="latest").duckdb_memory_limit == "50%"
    # a spool that is a file was read as "no spool yet": the events in the directory meant were never loaded
    (no_outreach_env / "spool.txt").write_text("not a spool")
    with pytest.raises(ConfigError) as info:
        resolve_settings(spool_dir=str(no_outreach_env / "spool.txt"))
    assert str(info.value) == (
        f"the webhook spool {no_outreach_env / 'spool.txt'} is a file, not a directory: set spool_dir (--spool) to the "
        "directory `outreach hooks listen` writes"
    )
    assert resolve_settings(spool_dir=str(no_outreach_env / "not_yet")).spool_path() is None  # made at the first event
    # a path of spaces only (a template's blank value) named a file or folder called that beside the command
    for name in ("DUCKDB_PATH", "SPOOL_DIR", "PIPELINES_DIR"):
        monkeypatch.setenv(f"SOURCES__OUTREACH__{name}", "   ")
        with pytest.raises(ConfigError) as info:
            resolve_settings()
        assert str(info.value) == (
            f"sources.outreach.{name.lower()} is blank: set it to a path, or unset it for the default"
        )
        monkeypatch.delenv(f"SOURCES__OUTREACH__{name}")
    # another of dlt's destinations is the sync's to load (status reads two); a blank one is unset
    assert resolve_settings(destination="snowflake").destination == "snowflake"
    assert resolve_settings(destination=" ").destination == " "


@pytest.mark.parametrize(
    ("option", "config", "error"),
    [
        (["--workers", "0"], "", "error: sources.outreach.workers must be at least 1, got 0"),
        (["--batch-size", "-1"], "", "error: sources.outreach.batch_size must be at least 1, got -1"),
        # from a settings file: with keys and a URL given as flags, the keys were checked against the API first
        (
            [],
            'duckdb_memory_limit = "lots"',
            "error: sources.outreach.duckdb_memory_limit is 'lots', not a size DuckDB takes, e.g. 64MB, 2GB or 50%",
        ),
        # a name dlt does not know failed after GET /account, in dlt's words ("... was first attempted to be
        # resolved as a named destination with a configured type ...")
        (
            [],
            'destination = "nope"',
            "error: sources.outreach.destination is no destination dlt knows: set duckdb (the default) or postgres "
            "(DESTINATION__POSTGRES__CREDENTIALS), or another of dlt's destinations by its name",
        ),
    ],
)
def test_a_setting_that_cannot_be_used_fails_before_the_first_api_request(
    option: list[str], config: str, error: str, no_outreach_env: Path, make_sandbox: Any
) -> None:
    """Given with keys and a URL, a bad number used to be found only after the keys were checked against the API."""
    (no_outreach_env / ".dlt").mkdir()
    (no_outreach_env / ".dlt" / "config.toml").write_text(f"[sources.outreach]\n{config}\n")
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    sandbox.reset_metrics()
    sync = [OUTREACH, "sync", "--base-url", sandbox.base_url, "--api-key", admin_keys(sandbox)[0], *option]
    result = subprocess.run(sync, capture_output=True, text=True, timeout=120, check=False)
    assert (result.returncode, result.stdout, result.stderr.splitlines()) == (1, "", [error]), result
    assert sandbox.metrics()["requests"] == 0


@pytest.mark.parametrize("given", ["", "   "])
def test_a_blank_path_flag_is_refused_by_every_command(given: str, no_outreach_env: Path) -> None:
    """`--duckdb "   "` named a file called that (`outreach models` made `   .writer.lock`), and `--spool ""` or
    `--duckdb ""` (an unset shell variable: Typer hands it on as ".") the current folder: the sync read it as its
    spool, the others said `--duckdb '.'` names a folder. Each path flag of each command refuses both, in one line."""
    url = ["--base-url", "http://127.0.0.1:9/api/v1", "--api-key", "k"]  # never asked: the path is refused first
    commands = {
        "--duckdb": [["sync", *url], ["check", *url], ["models"], ["status"], ["alerts"], ["alerts", "replies"],
                     ["docs"], ["report"], ["demo"], ["hooks", "subscribe", "--target", "https://x.test/h"]],
        "--spool": [["sync", *url], ["alerts", "replies"], ["hooks", "listen"]],
        "--out": [["report"], ["docs"]],
    }  # fmt: skip
    for flag, uses in commands.items():
        for command in uses:
            result = CliRunner().invoke(app, [*command, flag, given])
            said = f"error: {flag} is blank: give a path, or leave it out for the default\n"
            assert (result.exit_code, result.output) == (1, said), (command, flag, result.output)
    assert sorted(p.name for p in no_outreach_env.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql://loader:se@cret@127.0.0.1:5432/wh", "holds an @ in its user or password, read as the start"),
        (
            "postgresql://loader:secret@127.0.0.1:54x2/wh",
            "is not a connection URL dlt can read (postgresql://user:password@host:5432/database): what it reads as "
            "the port is not a number",
        ),
    ],
)
def test_a_postgres_url_that_cannot_be_read_fails_before_the_first_request_and_shows_no_part_of_the_password(
    url: str, said: str, no_outreach_env: Path, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unencoded @ in the password made the rest of it the host, which the connection error then showed
    (`could not translate host name "cret@127.0.0.1"`), after the keys were checked against the API; a port that
    is not a number was advised to percent-encode the user and password only."""
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    sandbox.reset_metrics()
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", url)
    sync = [OUTREACH, "sync", "--destination", "postgres", "--base-url", sandbox.base_url]
    for command in ([*sync, "--api-key", admin_keys(sandbox)[0]], [OUTREACH, "status", "--destination", "postgres"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 1 and result.stderr.startswith(f"error: DESTINATION__POSTGRES__CREDENTIALS {said}")
        assert len(result.stderr.splitlines()) == 1 and "cret" not in result.stdout + result.stderr, result
    assert sandbox.metrics()["requests"] == 0


def _storage_version(path: Path) -> str:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as wh (read_only)")
        tags = con.execute("select tags from duckdb_databases() where database_name = 'wh'").fetchone()[0]
    finally:
        con.close()
    return str(tags["storage_version"])


def test_every_command_honours_the_configured_warehouse_which_is_created_in_the_configured_format(
    make_sandbox: Any, tmp_path: Path
) -> None:
    """SOURCES__OUTREACH__DUCKDB_PATH, no --duckdb anywhere: `outreach sync`, `python -m pipelines`,
    `outreach status` and the flows' stages all use it; the file is in DuckDB's v1.0.0 format and stays so."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    configured = tmp_path / "elsewhere" / "wh.duckdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__DUCKDB_PATH=str(configured),
        SOURCES__OUTREACH__API_KEY=key,
        SOURCES__OUTREACH__BASE_URL=sb.base_url,
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0",
        SOURCES__OUTREACH__PIPELINES_DIR=str(tmp_path / "p"),
        SOURCES__OUTREACH__REPLY_BODY_CAP="100000",
    )
    work = tmp_path / "cwd"
    work.mkdir()
    done = subprocess.run(
        [OUTREACH, "sync", "--mode", "full", "--no-progress"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert configured.exists() and not (work / "data").exists()
    assert str(configured) in done.stdout
    again = subprocess.run(
        [sys.executable, "-m", "pipelines", "--no-progress"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert not (work / "data").exists()
    assert_warehouse_equals_api(configured, api_truth(sb.base_url, key))
    assert _storage_version(configured).startswith("v1.0.0")  # "v1.0.0+": DuckDB 1.0 and later read it

    status = subprocess.run(
        [OUTREACH, "status", "--json"], env=env, cwd=work, capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0 and json.loads(status.stdout)["warehouse"] == str(configured), status.stderr
    code = "from flows import stages; print(stages.warehouse_path(None))"
    flows_path = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=work, capture_output=True, text=True, timeout=60
    )
    assert flows_path.stdout.strip() == str(configured), flows_path.stderr

    other = tmp_path / "other.duckdb"
    env["SOURCES__OUTREACH__DUCKDB_STORAGE_VERSION"] = "v1.2.0"
    made = subprocess.run(
        [OUTREACH, "sync", "--duckdb", str(other), "--no-progress"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    assert _storage_version(other).startswith("v1.2.0")
