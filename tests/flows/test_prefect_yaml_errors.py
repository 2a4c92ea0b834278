"""A prefect.yaml edited by hand into a mistake: `outreach serve` names the file, where, and the fix in one line.
They were `error: ValueError: Invalid cron string: "*/15 * * *"` and `error: ParserError: while parsing a flow
sequence`, naming neither the file nor the place."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flows.deployments import PROJECT_ROOT

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def _serve(prefect_yaml: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    return subprocess.run(
        [OUTREACH, "serve"], env={**env, "OUTREACH_PREFECT_YAML": str(prefect_yaml)}, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_cron_prefect_does_not_take_is_named_with_the_file(tmp_path: Path) -> None:
    text = (PROJECT_ROOT / "prefect.yaml").read_text()
    assert "*/15 * * * *" in text
    edited = tmp_path / "prefect.yaml"
    edited.write_text(text.replace("*/15 * * * *", "*/15 * * *", 1))
    result = _serve(edited)
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [
        "error: prefect.yaml schedule cron '*/15 * * *' (of {'cron': '*/15 * * *', 'timezone': 'UTC'}) is not one "
        f"Prefect takes (ValueError): fix it in {edited}"
    ]


def test_yaml_that_does_not_parse_is_named_with_its_line_and_column(tmp_path: Path) -> None:
    broken = tmp_path / "prefect.yaml"
    broken.write_text("deployments:\n  - name: x\n    entrypoint: [unclosed\n")
    result = _serve(broken)
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [
        f"error: {broken} is not valid YAML (line 4, column 1): fix it, or restore it from the repository"
    ]
