"""What a build did, from dbt's results: per-model timings, data-test outcomes, warnings, the BI file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from models import STAGING_PREFIX

if TYPE_CHECKING:
    from models.freshness_outcome import FreshnessReport

FAILED = frozenset({"error", "fail", "runtime error", "skipped", "partial success"})


@dataclass
class NodeResult:
    """One dbt node of the run (a model, a data test or the on-run-end hook)."""

    name: str
    resource_type: str  # model | test | operation
    status: str  # dbt's: success, error, skipped, pass, fail, warn, ...
    seconds: float = 0.0
    message: str = ""
    failures: int | None = None  # rows a test returned
    kind: str = ""  # models: view | table | incremental | ephemeral
    rows: int | None = None  # mart tables: rows after the build (DuckDB)
    sample: str = ""  # tests that failed or warned: up to 3 offending rows

    @property
    def is_mart(self) -> bool:
        """A mart table of `reporting`: rebuilt (`table`) or merged into (`incremental`)."""
        return self.kind in ("table", "incremental") and not self.name.startswith(STAGING_PREFIX)

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    def problem_line(self) -> str:
        """`model x: <reason>` or `test y: 3 rows (a=1 b=2; ...)`, one line."""
        if self.resource_type == "test" and self.status in ("fail", "warn"):
            rows = f"{self.failures} row{'' if self.failures == 1 else 's'}"
            return f"test {self.name}: {rows}" + (f" ({self.sample})" if self.sample else "")
        reason = " ".join(self.message.split())[:400] or self.status
        return f"{self.resource_type} {self.name}: {reason}"


@dataclass
class BuildReport:
    target: str
    results: list[NodeResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str = ""  # the run itself failed (profile, connection, compilation)
    bi_path: Path | None = None
    seconds: float = 0.0
    publish_seconds: float = 0.0
    freshness: FreshnessReport | None = None  # `dbt source freshness`, run before the build
    every_row: str = ""  # why the build chose to rebuild every mart from every row (models/change_share.py)

    @property
    def models(self) -> list[NodeResult]:
        return [r for r in self.results if r.resource_type == "model"]

    @property
    def tests(self) -> list[NodeResult]:
        return [r for r in self.results if r.resource_type == "test"]

    @property
    def passed(self) -> bool:
        return not self.error and not any(r.failed for r in self.results)

    def problem_lines(self) -> list[str]:
        """One line per failing model or test (skipped nodes only count when nothing else explains them)."""
        failing = [r for r in self.results if r.failed and r.status != "skipped"]
        lines = [r.problem_line() for r in failing]
        skipped = [r for r in self.results if r.status == "skipped"]
        if skipped and not failing:
            lines += [r.problem_line() for r in skipped]
        if self.error:
            lines.insert(0, self.error)
        return lines

    def summary(self) -> str:
        """The one-screen summary `outreach models` prints."""
        staging = [m for m in self.models if m.name.startswith(STAGING_PREFIX)]
        tables = [m for m in self.models if m.is_mart]
        tests = self.tests
        passed = sum(1 for t in tests if t.status == "pass")
        warned = [t for t in tests if t.status == "warn"]
        failed = [t for t in tests if t.failed and t.status != "skipped"]
        skipped = [t for t in tests if t.status == "skipped"]  # not run: a model they test failed
        lines = [
            (
                f"models: {len(staging)} staging models, {len(tables)} mart tables built in {self.seconds:.2f}s "
                f"on {self.target}"
            )
        ]
        if self.every_row:
            lines.append(f"built from every row: {self.every_row}")
        for m in tables:
            rows = "" if m.rows is None else f"{m.rows:>10,} rows"
            lines.append(f"  {m.name:<24} {rows:>15}  {m.seconds:6.2f}s  {m.status}")
        lines.append(
            f"data tests: {passed}/{len(tests)} passed"
            + (f", {len(warned)} warned" if warned else "")
            + (f", {len(failed)} FAILED" if failed else "")
            + (f", {len(skipped)} skipped" if skipped else "")
        )
        for test in warned:
            lines.append(f"warning: {test.problem_line()}")
        for warning in self.warnings:
            lines.append(f"warning: {warning}")
        if self.freshness is not None:
            lines += self.freshness.summary_lines()
        if self.bi_path is not None:
            lines.append(f"BI file: {self.bi_path} (published in {self.publish_seconds:.2f}s)")
        else:
            lines.append("BI file: not published")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The same, as a Markdown artifact (Prefect)."""
        out = [
            "## Reporting models",
            "",
            f"Warehouse `{self.target}`; built with dbt in {self.seconds:.2f} s."
            + (f" Built from every row: {self.every_row}." if self.every_row else ""),
            "",
            "| model | kind | rows | seconds | status |",
            "|---|---|---:|---:|---|",
        ]
        out += [
            f"| {m.name} | {m.kind} | {'' if m.rows is None else f'{m.rows:,}'} | {m.seconds:.2f} | {m.status} |"
            for m in self.models
        ]
        out += ["", "| data test | rows | result |", "|---|---:|---|"]
        out += [f"| {t.name} | {t.failures if t.failures is not None else ''} | {t.status} |" for t in self.tests]
        problems = self.problem_lines() + [f"warning: {w}" for w in self.warnings]
        if problems:
            out += [""] + [f"- {line}" for line in problems]
        if self.freshness is not None:
            out += ["", self.freshness.to_markdown()]
        out += ["", f"BI file: `{self.bi_path}`" if self.bi_path else "BI file: not published"]
        return "\n".join(out)
