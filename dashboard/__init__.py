"""The HTML dashboard (``outreach report``): one self-contained file drawn from the BI file.

``write_report(bi_path, out_path) -> Path`` is the whole interface; ``report_path_for`` and
``bi_path_for`` give the default paths beside a warehouse. See dashboard/README.md.
"""

from __future__ import annotations

from dashboard.errors import ReportError
from dashboard.paths import bi_path_for, configured_warehouse, report_path_for
from dashboard.report import write_report

__all__ = ["ReportError", "bi_path_for", "configured_warehouse", "report_path_for", "write_report"]
