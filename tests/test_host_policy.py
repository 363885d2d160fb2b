"""The host policy under the lab's rules (registry/fleet/policy.py): a faulting engine
gets one run, its evidence kept, one probe, the host held; a full disk refused before
the start; a worker killed with -9 leaves no engine; the next worker reaps what a
dead one left; the fleet knows B70 hardware from captured xpu-smi output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from registry.errors import Refused
from registry.executor import orphans
from registry.executor.storage import admit, measure
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"


def engine_pids(folder: Path) -> list[int]:
    return [json.loads(p.read_text())["pid"] for p in folder.glob("engine-*.json")]


def test_the_next_worker_reaps_an_engine_whose_owner_was_killed(tmp_path) -> None:
    """An owner that registered its engine and died with -9 (no cleanup, no parent-death
    signal asked): `reap` stops the engine's group by its pid, never by a pattern."""
    owner = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "from pathlib import Path\n"
        "from registry.executor import orphans\n"
        "p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        f"orphans.register(Path({str(tmp_path)!r}), p.pid, 'log')\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(300)\n")], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert owner.stdout is not None
    engine = int(owner.stdout.readline())
    started = orphans.start_time(engine)
    assert orphans.reap(tmp_path) == []  # its owner is alive: not an orphan
    owner.kill()
    owner.wait()
    assert orphans.alive(engine, started)  # the kill left it running
    [reaped] = orphans.reap(tmp_path, grace_s=5)
    assert reaped.pid == engine and reaped.gone and reaped.steps == [f"SIGTERM group {engine}"]
    assert not orphans.alive(engine, started) and engine_pids(tmp_path) == []


def test_storage_is_refused_with_the_figures_on_a_full_filesystem(tmp_path) -> None:
    """A 16 MiB tmpfs filled to 1 MiB free; where no tmpfs can be mounted, a reserve
    larger than the free space of the test's own filesystem stands for a full disk."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                          capture_output=True)
    try:
        if done.returncode == 0:
            (mount / "fill").write_bytes(b"\0" * (15 * 2**20))
            planned, reserve = 2 * 2**20, 2**20
        else:
            free = measure(mount, 0, 0).free_bytes
            planned, reserve = 2**20, free
        with pytest.raises(Refused) as e:
            admit(mount / "runs", planned, reserve)
        free = measure(mount, 0, 0).free_bytes
        assert f"has {free / 2**30:.3f} GiB ({free} bytes) free" in e.value.message
        assert f"({planned} bytes)" in e.value.message and f"({reserve} bytes)" in \
            e.value.message
        assert not (mount / "runs").exists()  # nothing created
        assert admit(mount, 0, 0).admitted
    finally:
        if done.returncode == 0:
            subprocess.run(["umount", str(mount)], check=True)


def test_a_policy_file_is_checked(tmp_path) -> None:
    from registry.errors import InvalidInput
    from registry.fleet.policy import HostPolicy, load_policy

    assert load_policy(None) == HostPolicy() and not HostPolicy().retry_engine_faults
    assert HostPolicy().reserve_gib == 50.0 and HostPolicy().stop.kill
    good = tmp_path / "p.toml"
    good.write_text('retry_engine_faults = true\nreserve_gib = 5\n[stop]\nkill = false\n')
    p = load_policy(good)
    assert p.retry_engine_faults and p.reserve_gib == 5 and not p.stop.kill
    bad = tmp_path / "bad.toml"
    bad.write_text("reserve_gib = -1\n")
    with pytest.raises(InvalidInput, match="reserve_gib"):
        load_policy(bad)
    bad.write_text("kill_everything = true\n")
    with pytest.raises(InvalidInput, match="kill_everything"):
        load_policy(bad)


def test_one_lane_per_host(tmp_path) -> None:
    """A second job on the host waits while another process holds the lane."""
    from registry.fleet.policy import HostPolicy, lane

    policy = HostPolicy(lane_lock=tmp_path / "lane.lock")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time\nfrom pathlib import Path\n"
        "from registry.fleet.policy import HostPolicy, lane\n"
        f"with lane(HostPolicy(lane_lock=Path({str(policy.lane_lock)!r}))):\n"
        "    print('held', flush=True)\n    time.sleep(1.5)\n")],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    with lane(policy):
        waited = time.monotonic() - start
    holder.wait()
    assert waited > 0.8, waited


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_held_host_starts_no_worker(cli, store_home, tmp_path, monkeypatch) -> None:
    hold = tmp_path / "held.json"
    hold.write_text(json.dumps({"reason": "engine fault on job 7", "job": 7}))
    policy = tmp_path / "policy.toml"
    policy.write_text(f'hold_file = "{hold}"\n[stop]\npid_dir = "{tmp_path / "pids"}"\n')
    r = cli("worker", "--once", "--policy", policy, "--url", "postgresql://nowhere.invalid/q")
    assert r.exit_code == 6 and "Traceback" not in r.stderr
    assert "held for a person since an engine fault: engine fault on job 7" in r.stderr
    assert str(hold) in r.stderr  # the hint: what to remove once the host is checked
    bad = tmp_path / "bad.toml"
    bad.write_text("reserve_gib = 'lots'\n")
    r = cli("worker", "--once", "--policy", bad, "--url", "postgresql://nowhere.invalid/q")
    assert r.exit_code == 4 and "reserve_gib" in r.stderr and "Traceback" not in r.stderr


def test_show_hardware_says_the_devices_were_captured(cli, monkeypatch) -> None:
    monkeypatch.delenv("REGISTRY_FLEET_HARDWARE", raising=False)
    monkeypatch.setenv("REGISTRY_DEVICES_CAPTURED",
                       str(DATA / "xpu" / "minimax-current-system-20260520.md"))
    r = cli("worker", "--show-hardware", "--json")
    shown = json.loads(r.stdout)
    assert shown["identity"] == "intel-arc-pro-b70x4" and shown["facts"]["accelerators"] == "4"
    assert shown["facts"]["devices_captured_from"].endswith("current-system-20260520.md")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_queue_add_refuses_a_claim_whose_evidence_names_no_hardware(
        cli, store_home, monkeypatch) -> None:
    """The contributor's vLLM harness log resolves no device: nothing to target (the
    queue is not even reached)."""
    monkeypatch.setenv("REGISTRY_QUEUE_URL", "postgresql://nowhere.invalid/q")
    r = cli("claim", "import", DATA / "lab-claims" / "dominick253-qwen36-27b-fp8-tp2")
    assert r.exit_code == 0, r.stderr
    r = cli("queue", "add", "dominick253-qwen36-27b-fp8-tp2")
    assert r.exit_code == 4 and "names no hardware" in r.stderr, r.stderr
    assert "--hardware" in r.stderr and "Traceback" not in r.stderr


def test_the_probe_reads_the_kernel_log_bounded_and_keeps_it(tmp_path, monkeypatch) -> None:
    """A line written to the kernel's log (/dev/kmsg, as a driver would) is in the probe's
    evidence; the lines are bounded; where no reader works the log says 'not readable'."""
    import uuid

    from registry.fleet.policy import HostPolicy, health_probe

    marker = f"registry-test fault marker {uuid.uuid4().hex}"
    try:
        Path("/dev/kmsg").write_text(marker + "\n")
    except OSError as e:
        pytest.skip(f"cannot write the kernel log here: {e.strerror}")
    probe = health_probe(HostPolicy(probe=["true"], kernel_log_minutes=5, kernel_log_lines=50))
    log = probe.kernel_log
    assert probe.passed and log is not None
    if not log.readable:
        pytest.skip(f"the kernel log is {log.note}")
    assert any(marker in line for line in log.lines), log.note
    assert len(log.lines) <= 50 and log.minutes == 5 and log.source in ("dmesg", "journalctl -k")
    one = health_probe(HostPolicy(probe=["true"], kernel_log_minutes=1440, kernel_log_lines=1))
    assert one.kernel_log and len(one.kernel_log.lines) == 1 and one.kernel_log.truncated
    monkeypatch.setenv("PATH", str(tmp_path))  # neither journalctl nor dmesg
    none = health_probe(HostPolicy(probe=[sys.executable, "-c", "pass"]))
    assert none.kernel_log and not none.kernel_log.readable and not none.kernel_log.lines
    assert none.kernel_log.note == ("not readable: journalctl: not installed; "
                                    "dmesg: not installed")
