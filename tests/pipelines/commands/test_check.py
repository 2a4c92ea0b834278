"""`outreach check` as a user runs it (a subprocess in a project directory with .dlt files), against a
real sandbox: origins of settings, each key's workspace and level, the warehouse, one line per problem."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def run_check(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DESTINATION__"))}
    return subprocess.run(
        [OUTREACH, "check", *args], cwd=cwd, env={**clean, **(env or {})}, capture_output=True, text=True, timeout=120
    )


def project(tmp_path: Path, config: str, secrets: str) -> Path:
    (tmp_path / ".dlt").mkdir(parents=True)
    (tmp_path / ".dlt" / "config.toml").write_text(config)
    (tmp_path / ".dlt" / "secrets.toml").write_text(secrets)
    return tmp_path


def setting(output: str, name: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.strip().startswith(name + " "))
    return line.split()


def test_a_warehouse_under_the_home_folder_is_the_one_checked(tmp_path: Path) -> None:
    """The check read the setting apart from the sync: `~/wh/w.duckdb` was a new file in a folder named `~`."""
    import duckdb

    (tmp_path / "wh").mkdir()
    duckdb.connect(str(tmp_path / "wh" / "w.duckdb")).close()
    cwd = project(tmp_path / "project", '[sources.outreach]\nduckdb_path = "~/wh/w.duckdb"\n', "")
    out = run_check(cwd, env={"HOME": str(tmp_path)}).stdout
    assert f"  {tmp_path / 'wh' / 'w.duckdb'}: ok, writable (exists)" in out.splitlines(), out


def test_settings_that_cannot_be_read_show_no_other_warehouse_s_spool(tmp_path: Path) -> None:
    """With a value that cannot be read, the spool line named the default warehouse's spool (data/outreach_spool),
    not the given warehouse's: a path where no event of this warehouse is spooled."""
    cwd = project(tmp_path, '[sources.outreach]\nrate_limit_per_minute = "fast"\n', "")
    out = run_check(cwd, "--duckdb", str(tmp_path / "wh" / "w.duckdb")).stdout
    assert " ".join(setting(out, "spool_dir")[1:]) == "the warehouse's (<stem>_spool beside a DuckDB file) default"
    assert (
        "  problem: [sources.outreach] rate_limit_per_minute (.dlt/config.toml) is not a whole number: set it to "
        "a whole number" in out.splitlines()
    ), out


def test_origins_keys_and_levels_and_warehouse(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = sb.keys()
    rw = next(k for k in keys if k["level"] == "rw" and k["role"] == "admin")
    read = next(k for k in keys if k["level"] == "read")
    former = next(k for k in keys if k["role"] == "former_admin")
    cwd = project(
        tmp_path,
        f'[sources.outreach]\nbase_url = "{sb.base_url}"\nduckdb_path = "wh/outreach.duckdb"\n',
        f'[sources.outreach]\napi_keys = ["{rw["key"]}", "{read["key"]}", "{former["key"]}"]\n',
    )
    sb.reset_metrics()
    result = run_check(cwd, env={"SOURCES__OUTREACH__WORKERS": "2"})
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert setting(out, "base_url")[1:] == [sb.base_url, ".dlt/config.toml"]
    assert setting(out, "api_keys")[1:3] == ["3", "key(s):"] and setting(out, "api_keys")[-1] == ".dlt/secrets.toml"
    assert setting(out, "workers")[1:] == ["2", "env", "SOURCES__OUTREACH__WORKERS"]
    assert setting(out, "duckdb_path")[1:] == ["wh/outreach.duckdb", ".dlt/config.toml"]
    assert setting(out, "reply_body_cap")[1:] == ["500", "default"]
    assert " ".join(setting(out, "batch_size")[1:]) == "25 full, 100 quick default"
    # the spool of the configured warehouse (it showed data/outreach_spool, the default warehouse's)
    assert " ".join(setting(out, "spool_dir")[1:]) == "the warehouse's (wh/outreach_spool) default"
    lines = out.splitlines()
    key_lines = [line for line in lines if line.strip().startswith("key #")]
    assert len(key_lines) == 3
    assert "level: read and write" in key_lines[0] and rw["workspace_name"] in key_lines[0]
    assert "level: cannot change data (read-only" in key_lines[1]
    assert "level: cannot change data (read-only, or made by a former admin)" in key_lines[2]
    assert any("wh/outreach.duckdb: ok, writable (created at the first sync)" in line for line in lines)
    # a check creates nothing: it made the dlt working directory and its owner's mark before
    assert any(line.endswith("wh/.outreach_dlt: none yet (the first sync creates it)") for line in lines), out
    assert not (cwd / "wh").exists()
    assert lines[-1] == "all checks passed"
    for k in (rw, read, former):
        assert k["key"] not in out + result.stderr and f"...{k['key'][-4:]}" in out
    assert sb.metrics()["by_route"] == {"GET /account": 3, "POST /hooks": 3}
    assert sb.metrics()["by_status"] == {"200": 3, "422": 1, "403": 2}


def test_every_problem_is_one_line_and_the_exit_is_non_zero(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    rw = next(k for k in sb.keys() if k["level"] == "rw")
    corrupt = tmp_path / "corrupt.duckdb"
    corrupt.write_bytes(b"not a database" * 100)
    cwd = project(tmp_path, "", "")
    bad_key = "sk_wrong_0000000000000000"
    result = run_check(
        cwd, "--base-url", sb.base_url, "--api-key", rw["key"], "--api-key", bad_key, "--duckdb", str(corrupt)
    )
    out = result.stdout
    assert result.returncode == 1
    problems = [line for line in out.splitlines() if line.strip().startswith("problem:")]
    assert len(problems) == 2, out
    assert "key #2 ...0000: API key rejected (401)" in problems[0]
    assert "is not a valid DuckDB database file" in problems[1]
    assert out.splitlines()[-1] == "2 problem(s): see the lines above"
    assert setting(out, "base_url")[1:] == [sb.base_url, "--base-url", "flag"]
    assert setting(out, "duckdb_path")[1:] == [str(corrupt), "--duckdb", "flag"]
    assert rw["key"] not in out and bad_key not in out


def test_nothing_configured(tmp_path: Path) -> None:
    result = run_check(project(tmp_path, "", ""))
    assert result.returncode == 1
    problems = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("problem:")]
    assert problems == [
        "problem: no API key: set SOURCES__OUTREACH__API_KEY (or __API_KEYS), [sources.outreach] api_key in "
        ".dlt/secrets.toml, or pass --api-key"
    ]
    assert setting(result.stdout, "base_url")[1:] == ["(not", "set)"]


def test_a_settings_file_that_does_not_parse_is_named_with_its_line_and_column(tmp_path: Path) -> None:
    """`check` stopped at it with the parser's text, and the other commands printed "settings cannot be read: A
    problem encountered when loading secrets.toml from paths [...]:", the reason cut off after the colon. The
    parser's text is not shown: it quotes the file, and a secrets.toml holds keys."""
    secret = "sk_rw_do_not_show_me_0001"
    cwd = project(tmp_path, "", f'[sources.outreach]\napi_key = "{secret}\n')
    said = "secrets.toml is not valid TOML (InvalidControlChar at line 2, column 36; read from ./.dlt/secrets.toml or "
    result = run_check(cwd)
    problems = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("problem:")]
    assert (result.returncode, len(problems), result.stderr) == (1, 1, ""), result
    assert problems[0].startswith(f"problem: {said}") and problems[0].endswith("secrets.toml): fix the file"), problems
    # the [alerts] settings, read from the same files, fail on the same line (they said "A problem encountered
    # when loading secrets.toml from paths [...]:", cut off after the colon): said once
    lines = result.stdout.splitlines()
    assert lines[lines.index("alerts ([alerts], as each build reads them):") + 1] == "  not checked: the problem above"
    assert setting(result.stdout, "api_key")[1:] == ["?", "unreadable:", "a", "settings", "file", "does", "not",
                                                     "parse", "(below)"]  # fmt: skip
    status = subprocess.run([OUTREACH, "status"], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert (status.returncode, status.stderr) == (1, f"error: {problems[0].removeprefix('problem: ')}\n"), status
    assert secret not in result.stdout + result.stderr + status.stdout + status.stderr


def test_a_value_of_the_wrong_kind_is_named_with_where_it_was_set(tmp_path: Path) -> None:
    """It was dlt's words ("Configured value for field `workers` cannot be coerced into type `<class 'int'>`"),
    naming neither the file nor the fix; the [alerts] settings the same."""
    cwd = project(tmp_path, '[sources.outreach]\nworkers = "many"\n\n[alerts]\nauto_pause = "maybe"\n', "")
    said = "[sources.outreach] workers (.dlt/config.toml) is not a whole number: set it to a whole number"
    result = run_check(cwd)
    problems = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("problem:")]
    assert result.returncode == 1 and f"problem: {said}" in problems, result
    for command, line in (
        (["status"], said),
        (["alerts", "guard"], "[alerts] auto_pause (.dlt/config.toml) is not true or false: set it to true or false"),
    ):
        done = subprocess.run([OUTREACH, *command], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {line}\n"), command


def test_a_url_setting_is_shown_without_its_password(tmp_path: Path) -> None:
    """The settings table printed base_url as given: a password in it on the terminal, in CI logs."""
    cwd = project(tmp_path, '[sources.outreach]\nbase_url = "http://u:SECRETPW@127.0.0.1:9/api/v1?token=SECRETQ"\n', "")
    result = run_check(cwd)
    assert setting(result.stdout, "base_url")[1:] == ["http://127.0.0.1:9/api/v1", ".dlt/config.toml"]
    assert "SECRET" not in result.stdout + result.stderr and result.returncode == 1


def test_the_alert_settings_are_checked_as_a_build_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A target Apprise cannot load, or a threshold out of its range, was found only after a build, as "alerts: not
    evaluated" (the build passed); `outreach check` did not read [alerts]. Targets are shown masked."""
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ALERTS__TARGETS", '["json://hooks.example.com/catch/s3cret", "nope://x"]')
    out = CliRunner().invoke(app, ["check", "--duckdb", str(tmp_path / "w.duckdb")]).stdout.splitlines()
    at = out.index("alerts ([alerts], as each build reads them):")
    assert out[at + 1].startswith("  problem: alerts.targets #2 (nope://…) is not a URL Apprise can load: ")
    monkeypatch.setenv("ALERTS__TARGETS", '["json://hooks.example.com/catch/s3cret"]')
    monkeypatch.setenv("ALERTS__AUTO_PAUSE", "true")
    done = CliRunner().invoke(app, ["check", "--duckdb", str(tmp_path / "w.duckdb")])
    out = done.stdout.splitlines()
    at = out.index("alerts ([alerts], as each build reads them):")
    assert out[at + 1 : at + 3] == [
        "  targets: 1 (json://hooks.example.com/…)",
        "  auto_pause: on (the deliverability guard)",
    ]
    assert "s3cret" not in done.output
