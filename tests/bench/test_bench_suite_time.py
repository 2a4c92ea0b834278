"""bench/suite_time.py: the fresh-clone run of `.ci/run`, on a repository whose `.ci/run` prints what pytest prints."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from bench import suite_time
from bench.results_commands import suite_time_section

PYTEST_TAIL = """\
Using --randomly-seed=830798274
........................................................................ [ 97%]
............                                                             [100%]
=========== 586 passed, 2 failed, 55 warnings in 618.74s (0:10:18) ============
"""


def test_parse_pytest_reads_the_seed_the_seconds_and_the_counts() -> None:
    found = suite_time.parse_pytest(PYTEST_TAIL)
    assert found == {"seed": 830798274, "pytest_s": 618.74, "counts": {"passed": 586, "failed": 2, "warnings": 55}}
    assert suite_time.parse_pytest("make: *** [Makefile:45: lint] Error 1\n") == {
        "seed": None,
        "pytest_s": None,
        "counts": {},
    }


def _repo(path: Path, ci_run: str) -> Path:
    (path / ".ci").mkdir(parents=True)
    (path / ".ci" / "run").write_text(ci_run)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(path), *command], check=True)
    return path


@pytest.mark.parametrize("exit_code", [0, 1])
def test_a_run_clones_the_commit_and_measures_its_ci_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int
) -> None:
    # the script burns about half a second of CPU in a process it waits for, then prints pytest's lines
    script = (
        'test -z "${SOURCES__OUTREACH__DUCKDB_PATH:-}" || exit 9\n'
        "python3 -c 'import time; end = time.process_time() + 0.5\nwhile time.process_time() < end: pass'\n"
        f"printf '%s' '{PYTEST_TAIL}'\nexit {exit_code}\n"
    )
    monkeypatch.setattr(suite_time, "ROOT", _repo(tmp_path / "repo", script))
    monkeypatch.setattr(suite_time, "SAMPLE_S", 0.1)
    monkeypatch.setenv("SOURCES__OUTREACH__DUCKDB_PATH", "/somewhere/else.duckdb")  # never reaches the run
    work = tmp_path / "work"
    work.mkdir()
    started = time.perf_counter()
    line = suite_time.run_once("HEAD", work)
    assert line["seed"] == 830798274 and line["pytest_s"] == 618.74
    assert line["counts"] == {"passed": 586, "failed": 2, "warnings": 55}
    assert line["passed"] is (exit_code == 0) and line["met"] is (exit_code == 0)
    assert 0.45 <= line["user_cpu_s"] + line["system_cpu_s"] < 30  # the waited-for process's CPU, counted once
    assert 0 < line["wall_s"] <= time.perf_counter() - started + 0.05  # rounded to 0.1 s
    assert line["busy_cores"] is not None and 0 <= line["busy_cores"] <= (line["cpus"] or 1)
    assert "[100%]" in Path(line["log"]).read_text()
    assert [p.name for p in work.iterdir() if p.is_dir()] == []  # the clone is removed, the log kept

    rows = suite_time_section({"result": [line]})
    assert rows[-1].startswith(f"| {line['rev']} | {line['date']} | ")
    assert ("| met |" in rows[-1]) is (exit_code == 0) and ("missed (FAILED)" in rows[-1]) is (exit_code == 1)


def test_an_interrupted_run_stops_every_process_of_its_ci_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "server.pid"
    # a server the suite started (here a sleep in the background), then the suite still running
    script = f"sleep 60 & echo $! > {pid_file}\necho '....  [ 50%]'\nsleep 60\n"
    monkeypatch.setattr(suite_time, "ROOT", _repo(tmp_path / "repo", script))

    class CtrlC:
        def search(self, text: str) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(suite_time, "_PROGRESS", CtrlC())
    work = tmp_path / "work"
    work.mkdir()
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        suite_time.run_once("HEAD", work)
    assert time.perf_counter() - started < 20
    server = Path(f"/proc/{pid_file.read_text().strip()}")
    deadline = time.monotonic() + 5
    while server.exists() and "Z" not in (server / "stat").read_text().split()[2] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server.exists() or (server / "stat").read_text().split()[2] == "Z"
