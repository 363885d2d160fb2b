"""XPU device facts from the lab's real captures (tests/data/xpu/README.md): the
B70 matched on its PCI id whatever xpu-smi calls it, per card its PCI address, driver
and link; the host identity the fleet derives from them; `reproduce`'s comparison."""

from __future__ import annotations

import json

import pytest

from registry.errors import InvalidInput
from registry.executor import xpu
from registry.executor.environment import CAPTURED_ENV, accelerators, captured_devices, devices
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "xpu"
SYSTEM = DATA / "minimax-current-system-20260520.md"


def test_the_lab_manifest_gives_four_b70_cards_with_address_driver_and_link() -> None:
    raw = captured_devices(SYSTEM)
    assert raw["captured-from"] == str(SYSTEM)  # a capture says it is one
    cards = accelerators(raw)
    assert [(c.index, c.name, c.pci_address, c.driver, c.link, c.pci_device_id) for c in cards] \
        == [(0, "Intel Arc Pro B70", "0000:03:00.0", "xe", "2.5GT/s x1", "0xe223"),
            (1, "Intel Arc Pro B70", "0000:83:00.0", "xe", "2.5GT/s x1", "0xe223"),
            (2, "Intel Arc Pro B70", "0000:a3:00.0", "xe", "2.5GT/s x1", "0xe223"),
            (3, "Intel Arc Pro B70", "0000:e3:00.0", "xe", "2.5GT/s x1", "0xe223")]
    assert {c.listed_name for c in cards} == {"Intel(R) Graphics [0xe223]"}  # xpu-smi 1.3.6
    assert all(c.memory_mib is None for c in cards)  # discovery -j lists no memory: unknown
    matrix = xpu.topology(raw["xpu-smi-topology"])
    assert sorted(matrix) == ["GPU 0/0", "GPU 1/0", "GPU 2/0", "GPU 3/0"]
    assert matrix["GPU 2/0"] == {"GPU 0/0": "NODE", "GPU 1/0": "NODE", "GPU 2/0": "S",
                                 "GPU 3/0": "NODE"}


@pytest.mark.parametrize("name", ["Intel(R) Graphics [0xe223]",
                                  "Intel(R) Arc(TM) Pro B70 Graphics",
                                  "Intel Arc Pro B70 Graphics"])
def test_every_name_of_the_b70_is_one_model(name: str) -> None:
    from registry.fleet.hardware import identity_of

    assert xpu.model_name(name) == "Intel Arc Pro B70"
    assert identity_of([name] * 4, None) == "intel-arc-pro-b70x4"
    assert xpu.model_name("Intel(R) Data Center GPU Max 1550") == \
        "Intel(R) Data Center GPU Max 1550"  # an unknown model is kept as listed


def test_the_text_table_and_a_later_xpu_smi_name() -> None:
    """xpu-smi's text table (its layout from xpu-smi's own source: `| id | Label: value
    |` rows), with the name later versions give the card and its memory."""
    table = "\n".join([
        "+-----------+------------------------------------------------+",
        "| Device ID | Device Information                             |",
        "+-----------+------------------------------------------------+",
        "| 0         | Device Name: Intel(R) Arc(TM) Pro B70 Graphics  |",
        "|           | Vendor Name: Intel(R) Corporation              |",
        "|           | PCI BDF Address: 0000:23:00.0                  |",
        "|           | Memory Physical Size: 32656.00 MiB             |",
        "+-----------+------------------------------------------------+"])
    [card] = accelerators({"xpu-smi": table})
    assert (card.name, card.pci_address, card.memory_mib) == \
        ("Intel Arc Pro B70", "0000:23:00.0", 32656)
    assert accelerators({"xpu-smi": "xpu-smi: command failed"}) == []


def test_the_laguna_idle_captures_verify_and_show_four_idle_cards() -> None:
    before = xpu.ps_capture((DATA / "laguna-pre-idle.json").read_text())
    after = xpu.ps_capture((DATA / "laguna-post-idle.json").read_text())
    assert before == {0: 2780, 1: 2776, 2: 2776, 3: 2768}  # the observer's own rows
    assert after == {0: 2776, 1: 2772, 2: 2780, 3: 2772}
    doc = json.loads((DATA / "laguna-pre-idle.json").read_text())
    doc["raw_capture"]["stdout_sha256"] = "0" * 64
    with pytest.raises(InvalidInput, match="does not match"):
        xpu.ps_capture(json.dumps(doc))


def test_a_capture_stands_for_the_devices_and_the_host_is_a_b70x4(monkeypatch) -> None:
    from registry.fleet.hardware import detect

    monkeypatch.delenv("REGISTRY_FLEET_HARDWARE", raising=False)
    monkeypatch.setenv(CAPTURED_ENV, str(SYSTEM))
    assert devices()["captured-from"] == str(SYSTEM)
    hw = detect()
    assert hw.identity == "intel-arc-pro-b70x4" and hw.detected
    monkeypatch.setenv(CAPTURED_ENV, str(DATA / "missing.md"))
    with pytest.raises(InvalidInput, match="cannot read"):
        devices()


def test_reproduce_compares_xpu_cards_as_it_compares_cuda_ones(monkeypatch) -> None:
    from registry.reproduce.environment import _devices

    monkeypatch.setenv(CAPTURED_ENV, str(SYSTEM))
    sealed = [a.model_dump() for a in accelerators(captured_devices(SYSTEM))]
    same = {f.name: f.equal for f in _devices({"accelerators": sealed}, devices())}
    assert same == {"platform.accelerators": True, "platform.driver": True,
                    "platform.pcie": True}
    x16 = [{**a, "link": "16GT/s x16"} if a["index"] == 1 else a for a in sealed]
    three = sealed[:3]
    drift = {f.name: f.equal for f in _devices({"accelerators": x16}, devices())}
    assert drift["platform.pcie"] is False and drift["platform.accelerators"] is True
    fewer = {f.name: f.equal for f in _devices({"accelerators": three}, devices())}
    assert fewer["platform.accelerators"] is False


def test_sycl_ls_names_the_cards_where_xpu_smi_is_absent() -> None:
    """No lab host committed `sycl-ls` output (lab-workflow.md section 4): these lines
    follow the layout sycl-ls prints (`[backend:type][backend:index] platform, device
    version [driver]`), the device name as the Muse packet's SYCL table gives it."""
    out = "\n".join([
        "[level_zero:gpu][level_zero:0] Intel(R) oneAPI Unified Runtime over Level-Zero, "
        "Intel Arc Pro B70 Graphics 20.2.0 [1.15.38308+1]",
        "[level_zero:gpu][level_zero:1] Intel(R) oneAPI Unified Runtime over Level-Zero, "
        "Intel Arc Pro B70 Graphics 20.2.0 [1.15.38308+1]",
        "[opencl:cpu][opencl:0] Intel(R) OpenCL, AMD EPYC 9124 16-Core Processor "
        "OpenCL 3.0 (Build 0) [2025.20.8.0.06_160000]"])
    assert xpu.sycl_devices(out) == ["Intel Arc Pro B70 Graphics"] * 2
    cards = accelerators({"sycl-ls": out})
    assert [(c.index, c.name) for c in cards] == [(0, "Intel Arc Pro B70"),
                                                  (1, "Intel Arc Pro B70")]


def test_a_record_s_hardware_is_what_its_evidence_names_or_refused() -> None:
    from registry.fleet.hardware import sealed_hardware

    sealed = {"accelerators": [a.model_dump() for a in accelerators(captured_devices(SYSTEM))],
              "cpu": "AMD EPYC"}
    assert sealed_hardware(sealed) == "intel-arc-pro-b70x4"
    assert sealed_hardware({"accelerators": [], "cpu": "AMD EPYC 9124"}) == "cpu-amd-epyc-9124"
    # imported from a lab's packet: no host facts, the engine log's devices
    assert sealed_hardware({}, "Intel(R) Arc(TM) Pro B70 Graphics", 4) == "intel-arc-pro-b70x4"
    assert sealed_hardware({}, "NVIDIA H200", None) == "nvidia-h200x1"
    for device in (None, "", "cpu"):
        with pytest.raises(InvalidInput, match="names no hardware"):
            sealed_hardware({}, device, 4)
