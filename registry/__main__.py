"""`python -m registry` and the `registry` command: Ctrl-C is one line and exit 130.

The SIGINT handler is installed before anything else is imported: an interrupt while
the command line is still loading (nothing written yet) ends at once; one during a
command raises KeyboardInterrupt, so its cleanup runs, and `registry.cli.app` reports
it once (a second Ctrl-C during that cleanup is ignored). One that lands in a finalizer
(a `__del__`, a weakref callback), where Python could only print "Exception ignored"
and carry on, is raised again from outside it.
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


def _swallowed(unraisable: "sys.UnraisableHookArgs") -> None:
    if not issubclass(unraisable.exc_type, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)
        return
    import threading

    signal.signal(signal.SIGINT, _interrupt)  # _interrupt ignored further ones: undone
    # from another thread, so that the handler runs once this finalizer has returned
    threading.Timer(0.001, signal.raise_signal, (signal.SIGINT,)).start()


READS = frozenset({"list", "show", "verify", "diff", "compare", "report"})
"""Commands that read the home and start no program but git."""


ALL_PLUGINS_OFF = ("__all__", "1", "true")  # pydantic's own test in plugin/_loader.py
PLUGIN_LOADER = "pydantic.plugin._loader"


def _no_plugin_loader() -> None:
    """With every plugin off, pydantic's loader finds none, yet importing it imports
    importlib.metadata (email, zipfile, csv: 20 ms of `list`). A stand-in that finds
    none either takes its place; anything else asked of it comes from the real one."""
    import types

    def real(name: str) -> object:
        if name.startswith("__"):  # the import system's probes (`__path__`, ...)
            raise AttributeError(name)
        del sys.modules[PLUGIN_LOADER]
        import importlib

        return getattr(importlib.import_module(PLUGIN_LOADER), name)

    loader = types.ModuleType(PLUGIN_LOADER, "registry's stand-in: no plugins")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    loader.__getattr__ = real  # type: ignore[method-assign]
    sys.modules.setdefault(PLUGIN_LOADER, loader)


def run() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _swallowed
    if sys.argv[1:2] and sys.argv[1] in READS:
        # pydantic looks for plugins before it builds its first validator: every installed
        # distribution's entry points, through importlib.metadata (a twentieth of `list`).
        # A read command validates the registry's own documents and starts no program
        # that could want one; a user's own setting wins.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        if os.environ["PYDANTIC_DISABLE_PLUGINS"] in ALL_PLUGINS_OFF:
            _no_plugin_loader()
    from registry.cli import main

    main()


if __name__ == "__main__":
    run()
