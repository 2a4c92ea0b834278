"""`outreach docs`: dbt's static docs site of the project, generated against the warehouse's published tables."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from models.dbt_invoke import invoke
from models.errors import ModelError
from models.preflight import check_warehouse
from models.settings import DEFAULT_DUCKDB_PATH, dbt_state_dir
from pipelines.core.outputs import replaceable, through_links
from pipelines.core.root_cause import explain_oserror, one_line
from pipelines.warehouse.destination import Warehouse

DOCS_TARGET_DIR = "docs_target"  # its own target/ (no atomic var), so the build's partial parse stays valid
DOCS_SITE_MARK = b'ng-app="dbt"'  # in the first line of dbt's static docs page


def default_docs_dir(target: Warehouse) -> Path:
    """`docs/` beside the DuckDB warehouse (data/docs/ for the default one); data/docs/ for PostgreSQL."""
    if target.duckdb_path is not None:
        return target.duckdb_path.parent / "docs"
    return DEFAULT_DUCKDB_PATH.resolve().parent / "docs"


def generate_docs(target: Warehouse, *, out_dir: Path | None = None) -> Path:
    """Run `dbt docs generate --static` and place its one-file site at `<out_dir>/index.html`."""
    check_warehouse(target)
    out = Path(out_dir or default_docs_dir(target))
    page = through_links(out / "index.html")
    try:  # before dbt's run of some seconds
        page.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = explain_oserror(exc) or one_line(exc)
        raise ModelError(
            f"cannot write the docs site into {out}: {why} (pass --out with a writable directory)"
        ) from exc
    _refuse_to_replace(page)
    outcome = invoke(["docs", "generate", "--static"], target, target_dir=DOCS_TARGET_DIR, write_json=True)
    site = dbt_state_dir(target) / DOCS_TARGET_DIR / "static_index.html"
    if not outcome.success or not site.exists():
        reason = " ".join(str(outcome.exception or "no static_index.html was written").split())[:400]
        raise ModelError(f"dbt docs generate failed: {reason} (see the dbt log under {dbt_state_dir(target) / 'logs'})")
    tmp = page.with_name(f".{page.name}.{os.getpid()}.tmp")
    try:  # the site is replaced whole or not at all, and a Ctrl-C leaves no temporary copy
        shutil.copyfile(site, tmp)
        os.replace(tmp, page)
    finally:
        tmp.unlink(missing_ok=True)
    return out / "index.html"


def _refuse_to_replace(page: Path) -> None:
    """Fails, before dbt's run, unless `page` is free or an earlier docs site: `--out .` in a web project would
    replace its own index.html."""
    try:
        site = replaceable(page, lambda start: DOCS_SITE_MARK in start)
    except OSError as exc:
        why = explain_oserror(exc) or one_line(exc)
        raise ModelError(
            f"cannot write the docs site into {page.parent}: {why} (pass --out with another directory)"
        ) from exc
    if not site:
        raise ModelError(
            f"{page} exists and is not a dbt docs site, which this would replace: pass --out with another directory"
        )
