"""The reporting layer: a dbt project (this folder) that builds schema `reporting` from the raw `outreach` tables.

`models.build.build()` runs it through dbt's programmatic runner with the sync's settings and publishes
the BI file; `cd models && dbt build` runs the same project for an analyst (profiles.yml reads the same
settings from environment variables). See models/README.md.
"""

from pathlib import Path

#: the dbt project directory (dbt_project.yml, profiles.yml, staging/, marts/, macros/, tests/)
PROJECT_DIR = Path(__file__).resolve().parent
#: how every staging model's name starts: staging tables (those that read another staging model) are neither
#: marts nor published to the BI file
STAGING_PREFIX = "stg_"
