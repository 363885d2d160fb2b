"""`registry report`: a static, offline HTML site for chosen records (docs/report.md).

`load` reads records through the library paths every reader uses, `charts` builds
Vega-Lite specs from raw rows, `html` and `pages` write the pages, `site` picks the
records and writes the folder.
"""

from registry.report.site import ReportSummary, Selection, build_report

__all__ = ["ReportSummary", "Selection", "build_report"]
