"""Intel XPU device facts from the tools an XPU host has: `xpu-smi discovery` (its JSON
`-j` and its text table), `xpu-smi topology -m`, `lspci -vv` (the link each card
negotiated) and `sycl-ls`, parsed into one `Accelerator` per card.

The model is matched on the PCI device id, not on the name: xpu-smi 1.3.6 names the
Arc Pro B70 `Intel(R) Graphics [0xe223]`, later versions `Intel(R) Arc(TM) Pro B70
Graphics`, and a SYCL runtime `Intel Arc Pro B70 Graphics`: three names, one card. DRM
card numbers do not follow PCI order, so cards are joined by their PCI address.
Nothing here runs a tool: the outputs come in as text (registry/executor/environment.py
runs them, or reads a capture).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from registry.formats.runfacts import Accelerator

KNOWN = {"0xe223": "Intel Arc Pro B70"}
"""PCI device id -> the model's one name (identities are derived from it)."""
_NAMED = [(re.compile(r"arc\S*\s+pro\s+b70", re.I), "0xe223"),
          (re.compile(r"\[0xe223\]", re.I), "0xe223")]
_BDF = re.compile(r"^(?:([0-9a-f]{4}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", re.I)
_LINK = re.compile(r"LnkSta:\s*Speed\s+(?P<speed>[\d.]+GT/s)[^,]*,\s*Width\s+(?P<width>x\d+)")
_HEADING = re.compile(r"^(?:###\s+|)(?P<bdf>(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\b",
                      re.I)


def model_name(name: str | None, pci_device_id: str | None = None) -> str | None:
    """The model's one name: by PCI id where known, else by a known name, else as
    listed."""
    pci = (pci_device_id or "").lower()
    if pci in KNOWN:
        return KNOWN[pci]
    for pattern, pci_id in _NAMED:
        if name and pattern.search(name):
            return KNOWN[pci_id]
    return name.strip() if name else None


def bdf(address: str | None) -> str | None:
    """`03:00.0` or `0000:03:00.0` -> `0000:03:00.0` (lower case); None if not one."""
    m = _BDF.match((address or "").strip())
    if not m:
        return None
    return f"{(m[1] or '0000').lower()}:{m[2].lower()}:{m[3].lower()}.{m[4]}"


def discovery(text: str) -> list[dict[str, Any]]:
    """`xpu-smi discovery -j` (its `device_list`) or the text table: one dict per card
    with xpu-smi's JSON keys; [] for output of neither shape."""
    try:
        doc = json.loads(text)
    except ValueError:
        return _discovery_table(text)
    found = doc.get("device_list") if isinstance(doc, dict) else None
    return [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []


_LABELS = {"device name": "device_name", "vendor name": "vendor_name", "uuid": "uuid",
           "soc uuid": "uuid", "pci bdf address": "pci_bdf_address",
           "pci device id": "pci_device_id", "drm device": "drm_device",
           "function type": "device_function_type", "driver version": "driver_version",
           "kernel version": "kernel_version", "memory physical size": "memory_physical_size"}


def _discovery_table(text: str) -> list[dict[str, Any]]:
    """The text table: `| 0 | Device Name: ... |` opens a card, `|   | Label: value |`
    adds to it."""
    cards: list[dict[str, Any]] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or ":" not in cells[1]:
            continue
        if cells[0].isdigit():
            cards.append({"device_id": int(cells[0])})
        elif cells[0] or not cards:
            continue
        label, _, value = cells[1].partition(":")
        key = _LABELS.get(label.strip().lower())
        if key:
            cards[-1][key] = value.strip()
    return cards


def links(text: str) -> dict[str, str]:
    """Per PCI address, the negotiated link (`2.5GT/s x1`) from `lspci -vv` output, or
    from a snapshot of it headed `### 03:00.0` per card."""
    found: dict[str, str] = {}
    for current, line in _card_lines(text):
        m = _LINK.search(line)
        if m and current not in found:
            found[current] = f"{m['speed']} {m['width']}"
    return found


def drivers(text: str) -> dict[str, str]:
    """Per PCI address, `Kernel driver in use` from `lspci -vv` output."""
    found: dict[str, str] = {}
    for current, line in _card_lines(text):
        if "Kernel driver in use:" in line:
            found.setdefault(current, line.split(":", 1)[1].strip())
    return found


def _card_lines(text: str) -> Iterator[tuple[str, str]]:
    """(PCI address, line) for each line under a card's heading in `lspci -vv` output."""
    current: str | None = None
    for line in text.splitlines():
        head = _HEADING.match(line)
        if head:
            current = bdf(head["bdf"])
        elif current:
            yield current, line


def topology(text: str) -> dict[str, dict[str, str]]:
    """`xpu-smi topology -m`: per card (`GPU 0/0`), its link to every other card
    (`S` itself, `NODE`, `XL..`, ...), CPU affinity left out."""
    rows = [line.split() for line in text.splitlines() if line.strip()]
    if not rows or "GPU" not in rows[0]:
        return {}
    names = [" ".join(rows[0][i:i + 2]) for i in range(0, len(rows[0]), 2)
             if rows[0][i] == "GPU"]
    matrix: dict[str, dict[str, str]] = {}
    for row in rows[1:]:
        if len(row) < 2 + len(names) or row[0] != "GPU":
            continue
        matrix[f"GPU {row[1]}"] = dict(zip(names, row[2:2 + len(names)], strict=True))
    return matrix


def sycl_devices(text: str) -> list[str]:
    """`sycl-ls`: the Level Zero GPU names (`[level_zero:gpu][level_zero:0] Intel(R)
    oneAPI Unified Runtime over Level-Zero, Intel(R) Arc(TM) Pro B70 Graphics 20.2.0
    [1.6.3...]` -> that name)."""
    out = []
    for line in text.splitlines():
        if "level_zero:gpu" not in line or "," not in line:
            continue
        name = line.split(",", 1)[1].strip()
        out.append(re.sub(r"\s+\d+\.\d+\.\d+\s+\[.*$", "", name))
    return out


def accelerators(raw: dict[str, str]) -> list[Accelerator]:
    """One per card of `xpu-smi discovery` (else of `sycl-ls`), joined by PCI address
    with `lspci`'s link and driver; memory where the text table gives it (the JSON does
    not)."""
    cards = discovery(raw.get("xpu-smi", ""))
    if not cards:  # no xpu-smi: the SYCL runtime's Level Zero GPUs, by name alone
        cards = [{"device_id": i, "device_name": n}
                 for i, n in enumerate(sycl_devices(raw.get("sycl-ls", "")))]
    lspci = raw.get("lspci", "")
    link, driver = links(lspci), drivers(lspci)
    out = []
    for i, card in enumerate(cards):
        address = bdf(str(card.get("pci_bdf_address") or ""))
        pci_id = str(card.get("pci_device_id") or "").lower() or None
        name = model_name(str(card.get("device_name") or ""), pci_id)
        index = card.get("device_id")
        out.append(Accelerator(
            vendor="intel", index=index if isinstance(index, int) else i,
            name=name or "unknown Intel GPU", driver=driver.get(address or "")
            or card.get("driver_version"), memory_mib=_mib(card.get("memory_physical_size")),
            pci_address=address, pci_device_id=pci_id,
            link=link.get(address or ""), listed_name=card.get("device_name")))
    return sorted(out, key=lambda a: a.index)


def _mib(value: Any) -> int | None:
    m = re.match(r"^\s*([\d.]+)\s*MiB", str(value or ""))
    return int(float(m[1])) if m else None


SECTIONS = {"xpu-smi": "Intel GPU discovery", "xpu-smi-topology": "XPU topology matrix",
            "lspci": "PCIe / driver snapshot", "sycl-ls": "sycl-ls"}
"""The lab's system manifest (`manifests/current-system-*.md`): its `## ` sections that
hold each tool's output."""


def from_manifest(text: str) -> dict[str, str]:
    """The tools' outputs as the lab's system manifest holds them, by tool."""
    parts: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            current = next((t for t, s in SECTIONS.items() if s == title), None)
            continue
        if current:
            parts.setdefault(current, []).append(line)
    return {tool: "\n".join(lines).strip() for tool, lines in parts.items()}


def ps_capture(text: str) -> dict[int, int]:
    """Per card, the MiB its processes hold, from the lab's `xpu-smi ps -j` capture (its
    idle snapshots: the tool's stdout in base64 with its sha256); a capture whose stdout
    does not hash to its own digest is refused."""
    import base64
    import hashlib

    from registry.errors import InvalidInput

    try:
        raw = json.loads(text)["raw_capture"]
        stdout = base64.b64decode(raw["stdout_base64"], validate=True)
        listed = json.loads(stdout)["device_util_by_proc_list"]
    except (ValueError, KeyError, TypeError) as e:
        raise InvalidInput(f"not an xpu-smi ps capture: {e}") from None
    if hashlib.sha256(stdout).hexdigest() != raw.get("stdout_sha256"):
        raise InvalidInput("xpu-smi ps capture: its stdout does not match its sha256")
    held: dict[int, int] = {}
    for row in listed if isinstance(listed, list) else []:
        if isinstance(row, dict) and isinstance(row.get("device_id"), int):
            held[row["device_id"]] = held.get(row["device_id"], 0) + int(row.get("mem_size") or 0)
    return held
