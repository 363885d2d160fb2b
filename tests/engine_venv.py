"""A second Python environment for the engine, as a user would have one: a real venv
(its own interpreter and sys.prefix, made by `python -m venv`) whose site-packages
reaches the test venv's packages through a `.pth` file, so it imports the same vLLM
and torch; and one distribution only it holds, so a fact read from the registry's own
process instead of this interpreter shows.

The venv is made from another interpreter of the same minor version when the host has
one (e.g. the system's Python beside a pyenv build): its patch release then differs
from the registry's, a second mark of whose facts were read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ONLY_HERE = ("flashinfer-python", "0.0.0+engine-venv")  # a name the test venv lacks


def _version(python: str) -> str | None:
    try:
        done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                              capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def base_python() -> str:
    """Another interpreter of this minor version on PATH, else this venv's base."""
    mine = os.path.realpath(sys._base_executable)
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which(name, path=folder)
        if found and os.path.realpath(found) != mine and Path(found).parent != \
                Path(sys.executable).parent and (v := _version(found)) and \
                v != sys.version.split()[0]:
            return found
    return sys._base_executable


def make(folder: Path) -> Path:
    """The venv at `folder`; returns its `bin/python` (a link: the venv's own entry)."""
    subprocess.run([base_python(), "-m", "venv", "--without-pip", str(folder)], check=True,
                   capture_output=True)
    python = folder / "bin" / "python"
    purelib = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    shared = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "shared-test-venv.pth").write_text("".join(f"{p}\n" for p in sorted(shared)))
    name, version = ONLY_HERE
    info = purelib / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return python
