#!/usr/bin/env python3
"""Team: sharing a ledger through a real sshd on localhost (tests/sshd.py).

- push then pull of N=1,000 records with 50 MB of objects (2,000 objects) over ssh:
  target <= 30 s, against the raw transfer of the same bytes measured in the same run
  (`git push` of the ledger + `tar | ssh tar` of the object folder: no checking);
- a pull with nothing new: target <= 1 s (in process; the CLI adds its start-up);
- `review` of one sealed record (the captured tiny-checkpoint-kv run): target <= 1 s,
  against `verify` of the same record.

Usage: tools/benchmarks/team.py [N] [MB]   (default 1000 50)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tools" / "benchmarks"
# this folder after the standard library: its queue.py would shadow `queue` (threads need it)
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != HERE), str(HERE)]

from ledgers import fill, new_home  # noqa: E402

from registry.signing.keys import signing_key  # noqa: E402
from registry.store.create import init_home  # noqa: E402
from registry.store.trust import pin_roots  # noqa: E402
from registry.team.remotes import add_remote  # noqa: E402
from registry.team.sync import create_remote, pull, push  # noqa: E402
from tests.sshd import start_sshd  # noqa: E402


def timed(f):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out


def raw_copy(sshd, home: Path, folder: Path) -> float:  # type: ignore[no-untyped-def]
    """The same bytes moved with no checking: the baseline."""
    ssh = [*sshd.ssh_command.split(), "-p", str(sshd.port), f"{sshd.user}@127.0.0.1"]
    subprocess.run(["git", "init", "-q", "--bare", str(folder / "ledger.git")], check=True)
    start = time.perf_counter()
    env = {"GIT_SSH_COMMAND": sshd.ssh_command, "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(home / "ledger"), "push", "-q",
                    sshd.url(folder / "ledger.git"), "main"], check=True, env=env)
    tar = subprocess.Popen(["tar", "-C", str(home), "-cf", "-", "objects/sha256"],
                           stdout=subprocess.PIPE)
    subprocess.run([*ssh, f"mkdir -p {folder} && tar -C {folder} -xf -"], stdin=tar.stdout,
                   check=True)
    tar.wait()
    return time.perf_counter() - start


def review_times(folder: Path) -> tuple[list[float], list[float]]:
    from registry.review import review_record
    from registry.seal import seal_run
    from registry.store.home import home_at
    from registry.store.verify import verify_records

    home = home_at(folder / "a" / ".registry")
    run = shutil.copytree(ROOT / "tests/data/cpu-runs/tiny-checkpoint-kv", folder / "run")
    sealed = seal_run(run, home=home)
    reviews = [timed(lambda: review_record(home, sealed.id))[0] for _ in range(5)]
    verifies = [timed(lambda: verify_records(home, sealed.id))[0] for _ in range(5)]
    return reviews, verifies


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory(prefix="registry-team-bench-") as tmp:
        folder = Path(tmp)
        sshd = start_sshd(folder / "sshd")
        try:
            a = new_home(folder / "a")
            fill(a, n, payload=mb * 1_000_000 // n)
            root = signing_key()[0]
            b = init_home(folder / "b" / ".registry")
            pin_roots(b, [root])
            for home in (a, b):
                remote = add_remote(home, "origin", sshd.url(folder / "remote"), sshd.ssh_command)
            create_remote(remote)
            pushed_s, pushed = timed(lambda: push(a, remote))
            pulled_s, pulled = timed(lambda: pull(b, remote))
            assert len(pulled.received) == n and pulled.objects_in.objects == len(
                pushed.sent) * (2 if mb else 1)
            idle = [timed(lambda: pull(b, remote))[0] for _ in range(5)]
            baseline = raw_copy(sshd, a.root, folder / "raw")
        finally:
            sshd.stop()
        reviews, verifies = review_times(folder)
    total = pushed_s + pulled_s
    print(f"push {n} records + {pushed.objects_out.objects} objects "
          f"({pushed.objects_out.bytes / 1e6:.1f} MB): {pushed_s:.2f} s; pull (all verified): "
          f"{pulled_s:.2f} s; total {total:.2f} s (target <= 30 s) "
          f"{'PASS' if total <= 30 else 'FAIL'}")
    print(f"  baseline, the same bytes unchecked (git push + tar over ssh): {baseline:.2f} s; "
          f"ratio {total / baseline:.1f}x")
    idle_s = statistics.median(idle)
    print(f"pull with nothing new: median {idle_s:.3f} s of 5 (target <= 1 s) "
          f"{'PASS' if idle_s <= 1 else 'FAIL'}")
    review_s, verify_s = statistics.median(reviews), statistics.median(verifies)
    print(f"review of one record: median {review_s:.3f} s of 5 (target <= 1 s) "
          f"{'PASS' if review_s <= 1 else 'FAIL'}; verify of the same record "
          f"{verify_s:.3f} s (ratio {review_s / verify_s:.1f}x)")


if __name__ == "__main__":
    main()
