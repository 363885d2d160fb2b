"""Write the Vega bundle `registry report` ships with every site (a developer's tool:
the registry itself never imports vl-convert):

    pip install vl-convert-python && python tools/vega_bundle.py

Vega, Vega-Lite and vega-embed as one offline script, built by vl-convert from the
copies inside its wheel (nothing is fetched), written to
registry/report/assets/vega.js with a first line naming the versions; their licenses
are in registry/report/assets/vega.LICENSE.txt (update it when a version changes).
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "registry" / "report" / "assets" / "vega.js"


def main() -> int:
    import vl_convert

    lite = vl_convert.get_vegalite_versions()[-1]
    head = (f"/* vega {vl_convert.get_vega_version()}, vega-lite {lite}, vega-embed "
            f"{vl_convert.get_vega_embed_version()}: built by tools/vega_bundle.py with "
            f"vl-convert-python {version('vl-convert-python')}; licenses in "
            "vega.LICENSE.txt */\n")
    body = vl_convert.javascript_bundle(
        "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;",
        vl_version=lite)
    TARGET.write_text(head + body, encoding="utf-8")
    print(f"{TARGET}: {TARGET.stat().st_size:,} bytes ({head.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
