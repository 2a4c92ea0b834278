"""Render the metric dictionary (models/metrics.yml) into dbt docs blocks (models/docs/metrics.md).

One definition per metric, written once in the yml: marts/marts.yml references each block with
`{{ doc('metric_<name>') }}`, so the docs site, the warehouse's table comments and the BI file carry the
same text; the `__overview__` block (the docs site's home page in `outreach docs`) shows the whole
dictionary as a table. Run `python -m models.metric_docs` after editing the yml; a test fails when the
rendered file is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from models import PROJECT_DIR

DICTIONARY = PROJECT_DIR / "metrics.yml"
RENDERED = PROJECT_DIR / "docs" / "metrics.md"


def load(path: Path = DICTIONARY) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def block_name(metric: str) -> str:
    return f"metric_{metric}"


def _formula(m: dict[str, Any]) -> str:
    if "numerator" in m:
        return f"{m['numerator']} / {m['denominator']}"
    return str(m["definition"]).strip().rstrip(".")


def _service(m: dict[str, Any]) -> str:
    return "no service figure" if m.get("service", "none") == "none" else f"equals the service's {m['service']}"


def _block(m: dict[str, Any]) -> str:
    parts = [f"**{m['name']}** ({m['kind']}, unit: {m['unit']}): {_formula(m)}."]
    if "numerator" in m and "definition" in m:
        parts.append(str(m["definition"]).strip())
    parts.append(f"Service: {_service(m)}.")
    if "others" in m:
        parts.append(str(m["others"]).strip())
    parts.append("Defined once in the metric dictionary (models/metrics.yml).")
    return f"{{% docs {block_name(m['name'])} %}}\n" + " ".join(parts) + "\n{% enddocs %}\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render(data: dict[str, Any]) -> str:
    metrics: list[dict[str, Any]] = data["metrics"]
    lines = [
        "{#- Rendered from models/metrics.yml by `python -m models.metric_docs`: edit the yml, not this file. -#}",
        "{% docs __overview__ %}",
        str(data["overview"]).strip(),
        "",
        "## Metric dictionary",
        "",
        "Every count and rate the marts publish, defined once (models/metrics.yml). Rates are fractions from "
        "0 to 1; the primary rates of `campaign_performance` equal the service's `rates.*` / 100.",
        "",
        "| metric | kind | unit | definition | service's figure | marts |",
        "|---|---|---|---|---|---|",
    ]
    for m in metrics:
        lines.append(
            f"| `{m['name']}` | {m['kind']} | {m['unit']} | {_cell(_formula(m))} | {_cell(_service(m))} | "
            f"{', '.join(m['marts'])} |"
        )
    lines += ["{% enddocs %}", ""]
    return "\n".join(lines) + "\n".join(_block(m) for m in metrics)


def main() -> int:
    RENDERED.write_text(render(load()), encoding="utf-8")
    print(f"wrote {RENDERED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
