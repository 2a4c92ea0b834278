"""The baseline: what a competent user writes in an afternoon with dlt's declarative `rest_api` source.

Same endpoints and same DuckDB destination as ours, with dlt defaults everywhere else:
bearer auth, page-number paging on `meta.last_page` with the largest allowed `per_page`,
campaign recipients and stats as child resources of campaigns, replies with an incremental
cursor on `received_at` (the API lists replies newest first, so `row_order="desc"` lets dlt stop
paging at the cursor), mailboxes and the account, every table merged on its primary key.

What this approach cannot do (by construction, not by neglect): skip unchanged campaigns' recipients
and stats (child resources re-read every parent), pace under the rate limit (it relies on dlt's
retry-on-429 with `Retry-After`), or fetch reply bodies (one GET per reply; left out, as a user
would). It uses dlt's default loader path (JSON lines, then INSERT into DuckDB).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import dlt
from dlt.sources.rest_api import rest_api_source

logger = logging.getLogger(__name__)

PIPELINE_NAME = "outreach_baseline"
DATASET_NAME = "outreach"


def baseline_config(base_url: str, api_key: str) -> dict[str, Any]:
    """The `RESTAPIConfig` of the baseline (see the module docstring for each choice)."""
    return {
        "client": {
            "base_url": base_url.rstrip("/") + "/",
            "auth": {"type": "bearer", "token": api_key},
            "paginator": {
                "type": "page_number",
                "base_page": 1,
                "page_param": "page",
                "total_path": "meta.last_page",
            },
        },
        "resource_defaults": {
            "primary_key": "id",
            "write_disposition": "merge",
            "endpoint": {"data_selector": "data"},
        },
        "resources": [
            {
                "name": "workspaces",
                "primary_key": "workspace__id",
                "endpoint": {"path": "account", "paginator": "single_page", "data_selector": "data"},
            },
            {
                "name": "campaigns",
                "endpoint": {"path": "campaigns", "params": {"per_page": 100}},
            },
            {
                "name": "campaign_recipients",
                "endpoint": {
                    "path": "campaigns/{resources.campaigns.id}/leads",
                    "params": {"per_page": 200},
                },
                "include_from_parent": ["id"],
            },
            {
                "name": "campaign_stats",
                "primary_key": "campaign__id",
                "endpoint": {
                    "path": "campaigns/{resources.campaigns.id}/stats",
                    "paginator": "single_page",
                },
            },
            {
                "name": "replies",
                "endpoint": {
                    "path": "replies",
                    "params": {"per_page": 100},
                    "incremental": {
                        "cursor_path": "received_at",
                        "initial_value": "1970-01-01T00:00:00Z",
                        "row_order": "desc",
                    },
                },
            },
            {
                "name": "email_accounts",
                "endpoint": {"path": "email-accounts", "paginator": "single_page"},
            },
        ],
    }


def run_baseline(*, base_url: str, api_key: str, duckdb_path: Path, pipelines_dir: Path) -> dict[str, int]:
    """Run the baseline once into `duckdb_path`; return rows loaded per table (from dlt's trace)."""
    pipeline = dlt.pipeline(
        pipeline_name=PIPELINE_NAME,
        pipelines_dir=str(pipelines_dir),
        destination=dlt.destinations.duckdb(str(duckdb_path)),
        dataset_name=DATASET_NAME,
    )
    source = rest_api_source(baseline_config(base_url, api_key))  # type: ignore[arg-type]
    pipeline.run(source)
    trace = pipeline.last_trace
    counts: dict[str, int] = {}
    if trace is not None and trace.last_normalize_info is not None:
        counts = {
            table: int(n) for table, n in trace.last_normalize_info.row_counts.items() if not table.startswith("_dlt")
        }
    logger.info("baseline loaded %s rows", sum(counts.values()))
    return counts
