"""What a build did: per-model timings, data-test results, the BI file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ModelResult:
    name: str
    kind: str  # "view" or "table"
    seconds: float
    rows: int | None  # tables only


@dataclass
class DataTestResult:
    name: str
    rows: int
    seconds: float
    sample: list[tuple[object, ...]] = field(default_factory=list)  # up to 5 offending rows

    @property
    def passed(self) -> bool:
        return self.rows == 0


@dataclass
class BuildReport:
    duckdb_path: Path
    models: list[ModelResult] = field(default_factory=list)
    tests: list[DataTestResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    bi_path: Path | None = None
    seconds: float = 0.0
    publish_seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tests)

    def summary(self) -> str:
        """The one-screen summary `outreach models` prints."""
        tables = [m for m in self.models if m.kind == "table"]
        views = [m for m in self.models if m.kind == "view"]
        failed = [t for t in self.tests if not t.passed]
        lines = [
            f"models: {len(views)} staging views, {len(tables)} mart tables built in {self.seconds:.2f}s "
            f"from {self.duckdb_path}",
        ]
        for m in tables:
            lines.append(f"  {m.name:<24} {m.rows or 0:>10,} rows  {m.seconds:6.2f}s")
        lines.append(
            f"data tests: {len(self.tests) - len(failed)}/{len(self.tests)} passed"
            + ("" if not failed else " - FAILED: " + ", ".join(f"{t.name} ({t.rows} rows)" for t in failed))
        )
        for warning in self.warnings:
            lines.append(f"warning: {warning}")
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
            f"Warehouse `{self.duckdb_path}`; built in {self.seconds:.2f} s.",
            "",
            "| model | kind | rows | seconds |",
            "|---|---|---:|---:|",
        ]
        out += [
            f"| {m.name} | {m.kind} | {'' if m.rows is None else f'{m.rows:,}'} | {m.seconds:.2f} |"
            for m in self.models
        ]
        out += ["", "| data test | rows | result |", "|---|---:|---|"]
        out += [f"| {t.name} | {t.rows} | {'pass' if t.passed else 'FAIL'} |" for t in self.tests]
        if self.warnings:
            out += [""] + [f"- warning: {w}" for w in self.warnings]
        out += ["", f"BI file: `{self.bi_path}`" if self.bi_path else "BI file: not published"]
        return "\n".join(out)
