"""CUDA as a first-class platform, without a GPU: device facts, drift, the engine tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.executor import environment as host
from registry.reproduce import environment as drift
from registry.seal import engine_tree, source_dir

# nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader on
# the lent machines (nvidia-h200-x2, as .library/device/KINDS.md records it: 143771 MiB,
# driver 580.159.04).
H200_X2 = "0, NVIDIA H200, 580.159.04, 143771 MiB\n1, NVIDIA H200, 580.159.04, 143771 MiB"


def test_device_model_driver_and_memory_from_nvidia_smi() -> None:
    found = host.accelerators({"nvidia-smi": H200_X2})
    assert [(a.index, a.name, a.driver, a.memory_mib) for a in found] == [
        (0, "NVIDIA H200", "580.159.04", 143771), (1, "NVIDIA H200", "580.159.04", 143771)]
    assert {a.vendor for a in found} == {"nvidia"}


@pytest.mark.parametrize("raw", [
    "",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    "failed: [Errno 13] Permission denied: 'nvidia-smi'",
    "index, name, driver_version, memory.total [MiB]",  # a header
    "0, NVIDIA H200, 580.159.04",  # too few cells
    ", , , ",
])
def test_other_output_is_left_to_the_raw_listing(raw) -> None:
    assert host.accelerators({"nvidia-smi": raw}) == []


def test_lines_are_kept_in_index_order_and_odd_memory_is_unknown() -> None:
    raw = "1, NVIDIA H100 80GB HBM3, 570.1, [N/A]\n0, NVIDIA H100 80GB HBM3, 570.1, 81559 MiB"
    found = host.accelerators({"nvidia-smi": raw})
    assert [a.index for a in found] == [0, 1] and found[1].memory_mib is None


def _facts(sealed: dict, now: str) -> dict[str, drift.Fact]:
    return {f.name: f for f in drift._devices(sealed, {"nvidia-smi": now})}


def test_reproduce_compares_models_memory_and_driver() -> None:
    sealed = {"accelerators": [a.model_dump() for a in host.accelerators(
        {"nvidia-smi": H200_X2})]}
    same = _facts(sealed, H200_X2)
    assert all(f.equal for f in same.values())
    assert same["platform.accelerators"].now == ["NVIDIA H200, 143771 MiB"] * 2
    one = _facts(sealed, H200_X2.splitlines()[0])  # a host with one GPU fewer
    assert not one["platform.accelerators"].equal and one["platform.driver"].equal
    newer = _facts(sealed, H200_X2.replace("580.159.04", "580.200.01"))
    assert newer["platform.accelerators"].equal and not newer["platform.driver"].equal
    none = _facts(sealed, "")  # no GPU here at all
    assert none["platform.accelerators"].now == [] and not none["platform.accelerators"].equal


def test_a_record_without_parsed_devices_compares_the_raw_listing() -> None:
    facts = _facts({"devices": {"nvidia-smi": H200_X2}}, H200_X2)
    assert list(facts) == ["platform.devices"] and facts["platform.devices"].equal
    assert drift._devices({}, {}) == []  # no device then or now: nothing to compare


def test_a_hostile_device_list_is_only_compared() -> None:
    facts = _facts({"accelerators": ["x", 3, {"name": ["?"]}]}, H200_X2)
    assert not facts["platform.accelerators"].equal  # no exception, a difference


# PEP 610 direct_url.json as pip writes it for each kind of install.
WHEEL = {"url": "file:///root/.cache/registry-gpu-kit/wheels/"
                "vllm-0.25.0-cp38-abi3-manylinux_2_28_x86_64.whl",
         "archive_info": {"hash": "sha256=00", "hashes": {"sha256": "00"}}}
CHECKOUT = {"url": "file:///src/vllm", "dir_info": {}}
EDITABLE = {"url": "file:///src/my%20vllm", "dir_info": {"editable": True}}
VCS = {"url": "https://github.com/vllm-project/vllm", "vcs_info": {"vcs": "git",
                                                                   "commit_id": "ab" * 20}}


def test_only_a_source_folder_is_an_engine_tree() -> None:
    assert source_dir(EDITABLE) == Path("/src/my vllm")
    assert source_dir(CHECKOUT) == Path("/src/vllm")
    assert source_dir(WHEEL) is None  # a path on the machine that downloaded the wheel
    assert source_dir(VCS) is None
    assert source_dir({"url": "file:///x", "dir_info": "odd"}) is None
    assert source_dir({"url": 3}) is None and source_dir(None) is None


def test_a_wheel_install_falls_back_to_the_installed_package() -> None:
    location, version = engine_tree(None, WHEEL)
    assert location is not None and location.name == "vllm"  # the installed package
    assert version is not None and not str(location).endswith(".whl")
