"""A record whose engine was started through a launcher reproduces without --recipe:
the launcher is restored from what the record holds (its bytes kept as launcher.script,
by digest), runs in place where it is unchanged on this host, and is refused where the
launcher on disk differs from the sealed digest. The scripted engine, a real shell
launcher."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from registry.errors import Refused
from registry.executor.engine import Engine
from registry.formats import rundir
from tests.test_ab import LOG, SCRIPT, recipe_pair

SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
LAUNCHER = "#!/bin/sh\n# the lab's way: its own arguments, then -- and the engine's\n" \
           "echo '--- server ---'\nshift\nexec \"$@\"\n"


def through_launcher(plan, log):  # type: ignore[no-untyped-def]
    """The scripted engine, started by the plan's launcher script (argv[0])."""
    assert plan.launcher and plan.argv[1] == "--"
    argv = [plan.argv[0], "--", sys.executable, str(SCRIPT), "--port", str(plan.port),
            json.dumps({"gap_s": 0.003, "log_file": str(LOG)})]
    return Engine(plan.model_copy(update={"argv": argv}), log)


@SQLITE
def test_a_launcher_record_reproduces_without_its_recipe(store_home, tmp_path) -> None:
    from registry.executor.run import run
    from registry.recipe import load_recipe
    from registry.reproduce import reproduce
    from registry.seal import seal_run

    a, _, models = recipe_pair(tmp_path, "0.003")
    recipe = Path(a)
    script = tmp_path / "launchers" / "pass.sh"
    script.parent.mkdir()
    script.write_text(LAUNCHER)
    script.chmod(0o755)
    recipe.write_text(recipe.read_text().replace(
        "[engine]\n", '[engine]\nlauncher = "launchers/pass.sh"\n', 1))
    run(load_recipe(recipe), tmp_path / "record", recipe_dir=recipe.parent,
        recipe_file=recipe, models_dir=models, launcher=through_launcher, timeout=60)
    assert (tmp_path / "record" / rundir.LAUNCHER_SCRIPT).read_text() == LAUNCHER
    rid = seal_run(tmp_path / "record", home=store_home, recipe_path=recipe).id
    sealed = json.loads((tmp_path / "record" / rundir.LAUNCHER).read_text())["sha256"]
    recipe.unlink()  # no --recipe, and nothing beside it to find

    def again(name: str):  # type: ignore[no-untyped-def]
        return reproduce(store_home, rid, models_dir=models, out_dir=tmp_path / name,
                         launcher=through_launcher, allow_env_drift=True,
                         max_rounds=1)

    done = again("in-place")  # unchanged where the record found it: run in place
    assert done.plan.launcher == str(script.resolve()) and done.record
    assert json.loads((tmp_path / "in-place" / rundir.LAUNCHER).read_text())["sha256"] == sealed

    script.write_text(LAUNCHER.replace("shift", "shift  # edited"))
    with pytest.raises(Refused, match=f"has sha256 [0-9a-f]{{64}}, the record sealed {sealed}"):
        again("edited")
    assert not (tmp_path / "edited").exists()  # refused before anything ran

    script.unlink()  # not on this host: the record's own copy stands in, by its digest
    done = again("restored")
    assert done.plan.launcher and done.plan.launcher != str(script.resolve())
    facts = json.loads((tmp_path / "restored" / rundir.LAUNCHER).read_text())
    assert facts["sha256"] == sealed and facts["exit_code"] is not None
    assert (tmp_path / "restored" / rundir.LAUNCHER_SCRIPT).read_text() == LAUNCHER
    assert not os.path.exists(facts["path"])  # its temporary place is gone with the run
