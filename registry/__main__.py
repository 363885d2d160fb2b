"""`python -m registry` and the `registry` command: Ctrl-C is one line and exit 130.

The SIGINT handler is installed before anything else is imported: an interrupt while
the command line is still loading (nothing written yet) ends at once; one during a
command raises KeyboardInterrupt, so its cleanup runs, and `registry.cli.app` reports
it once (a second Ctrl-C during that cleanup is ignored).
"""

import os
import signal
import sys


def _interrupt(signum: int, frame: object) -> None:
    app = sys.modules.get("registry.cli.app")
    if app is None or not getattr(app, "INVOKING", False):
        os.write(2, b"interrupted\n")
        os._exit(130)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def run() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    from registry.cli import main

    main()


if __name__ == "__main__":
    run()
