"""Hostile GGUF headers of about a kilobyte, written by hand (tests/gguf_bytes.py): each is
one clear error naming the file, in bounded memory and time, through the reader,
`registry resolve --checkpoint` (exit 4), `registry inspect` (exit 4), and `registry seal`
of a run whose log names it (a `checkpoint not read` note); never a MemoryError, a
RecursionError, a KeyError or a traceback. A property test draws random headers."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.engines.llamacpp.gguf import read_gguf
from registry.errors import InvalidInput
from tests.gguf_bytes import (
    ARRAY,
    F32,
    UINT8,
    UINT64,
    gguf,
    header,
    kv,
    kv_str,
    kv_u32,
    llama_keys,
    tensor,
    text,
    u32,
    u64,
)

MIB = 1 << 20
gguf_package = pytest.importorskip("gguf")  # loaded before memory is traced: its tables


def nested(depth: int) -> bytes:
    """An array of one array of one array ... `depth` deep, ending in an empty u8 array."""
    return u32(ARRAY) + u64(1) + nested(depth - 1) if depth > 1 else u32(UINT8) + u64(0)


def nested_flat(depth: int) -> bytes:
    return (u32(ARRAY) + u64(1)) * (depth - 1) + u32(UINT8) + u64(0)


ATTACKS = {  # name -> (file bytes, what the error says)
    "block_count 2**40": (gguf([*llama_keys()[:2], kv("llama.block_count", UINT64, u64(2**40)),
                               *llama_keys()[3:]]), "llama.block_count is 1099511627776"),
    "a u8 array of 2**40 items": (gguf([*llama_keys(), kv("x", ARRAY, u32(UINT8) + u64(2**40))]),
                                  "the 1,099,511,627,776 items of 'x'"),
    "2**60 tensors": (gguf(counts=(2**60, 7)), "the tensor count"),
    "2**60 keys": (gguf(counts=(1, 2**60)), "the key count"),
    "a string of 2**62 bytes": (gguf([kv("general.name", 8, u64(2**62) + b"x")]),
                                "the string 'general.name'"),
    "2**31 dimensions": (gguf(tensors=[text("t") + u32(2**31) + u64(64) + u32(F32) + u64(0)]),
                         "2,147,483,648 dimensions"),
    "arrays nested 20,000 deep": (gguf([kv("deep", ARRAY, nested_flat(20_000))]),
                                  "nests arrays deeper"),
    "a duplicated key": (gguf([*llama_keys(), kv_u32("llama.block_count", 3)]),
                         "'llama.block_count' appears twice"),
    "a duplicated tensor": (gguf(tensors=[tensor("w", [32], F32), tensor("w", [32], F32)],
                                 data=b"\0" * 256), "'w' appears twice"),
    "tensor data past the end": (gguf(tensors=[tensor("w", [64], F32, offset=2**40)]),
                                 "lies outside the file"),
    "an unknown value type": (gguf([kv("x", 77, b"\0" * 8)]), "value type 77"),
    "an unknown tensor type": (gguf(tensors=[tensor("w", [32], 200)]), "type 200"),
    "block_count a string": (gguf([*llama_keys()[:2], kv_str("llama.block_count", "lots"),
                                   *llama_keys()[3:]]), "not a count"),
    "version 1": (header(0, 0, version=1), "version 1"),
}


@pytest.fixture(params=sorted(ATTACKS))
def attack(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    data, says = ATTACKS[request.param]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    assert len(data) < 300_000  # the nested one is 240 KB; the rest about a kilobyte
    return path, says


def test_a_hostile_header_is_one_clear_error_in_bounded_memory(attack: tuple[Path, str]
                                                               ) -> None:
    path, says = attack
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInput, match="not a readable GGUF file") as e:
            read_gguf(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert says in e.value.message and str(path) in e.value.message
    assert peak < 4 * MIB, peak


def test_a_well_formed_header_written_by_hand_reads(tmp_path: Path) -> None:
    path = tmp_path / "ok.gguf"
    path.write_bytes(gguf())
    info = read_gguf(path)
    assert (info.architecture, info.file_type, info.layers, info.kv_heads) == (
        "llama", "Q8_0", 2, [2, 2])
    assert (info.tensor_types, info.parameters, info.tensor_bytes) == ({"q8_0": 1}, 64, 68)
    assert info.key_length == 16  # 64 / 4 heads: llama.cpp's default without key_length


def test_resolve_checkpoint_refuses_it_with_exit_4(cli, attack: tuple[Path, str],
                                                   tmp_path: Path) -> None:
    path, says = attack
    run = _run(tmp_path, path)
    r = cli("resolve", run, "--checkpoint", path)
    assert r.exit_code == 4, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and says in " ".join(r.stderr.split())


def test_inspect_reads_a_gguf_and_refuses_a_hostile_one(cli, attack: tuple[Path, str],
                                                         tmp_path: Path) -> None:
    path, says = attack
    r = cli("inspect", path)
    assert r.exit_code == 4 and "Traceback" not in r.stderr
    assert says in " ".join(r.stderr.split())
    good = tmp_path / "good.gguf"
    good.write_bytes(gguf())
    r = cli("inspect", good, "--json")
    assert r.exit_code == 0, r.stderr
    shown = json.loads(r.stdout)["gguf"]
    assert (shown["file_type"], shown["layers"], shown["tensor_types"]) == ("Q8_0", 2,
                                                                             {"q8_0": 1})


def test_a_log_naming_it_resolves_with_a_note(cli, attack: tuple[Path, str],
                                              tmp_path: Path) -> None:
    """Seal and resolve read the GGUF the log names: a hostile one is a note, the rest of
    the identity resolves."""
    path, says = attack
    r = cli("resolve", _run(tmp_path, path), "--json")
    assert r.exit_code == 0, r.stderr
    notes = json.loads(r.stdout)["notes"]
    assert any(n.startswith("checkpoint not read") and says in n for n in notes), notes


def _run(tmp_path: Path, model: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "server.log").write_text(
        f"srv    load_model: loading model '{model}'\n"
        f"llama_model_loader: loaded meta data with 7 key-value pairs and 1 tensors from "
        f"{model} (version GGUF V3 (latest))\n")
    return run


PIECES = st.sampled_from([*llama_keys(), kv("a", ARRAY, u32(UINT8) + u64(3) + b"abc"),
                          kv("s", ARRAY, u32(8) + u64(2) + text("x") + text("yy")),
                          kv("n", ARRAY, nested(3)), tensor("w", [32], F32),
                          tensor("q", [64, 2], 8, offset=128)])
NUMBERS = st.sampled_from([0, 1, 2, 31, 2**31, 2**32 - 1, 2**40, 2**62, 2**64 - 1])


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(PIECES, max_size=12), counts=st.tuples(NUMBERS, NUMBERS),
       version=st.sampled_from([2, 3, 1, 2**24 * 3]), cut=st.integers(0, 2000),
       flips=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=4),
       tail=st.binary(max_size=200))
def test_random_headers_never_crash_the_reader(tmp_path_factory: pytest.TempPathFactory,
                                               pieces: list[bytes], counts: tuple[int, int],
                                               version: int, cut: int,
                                               flips: list[tuple[int, int]],
                                               tail: bytes) -> None:
    """Any header: a GGUFInfo or one InvalidInput, under 4 MiB of Python allocations."""
    data = bytearray(header(*counts, version=version % 2**32) + b"".join(pieces) + tail)
    for at, byte in flips:
        if at < len(data):
            data[at] = byte
    path = tmp_path_factory.mktemp("g") / "r.gguf"
    path.write_bytes(bytes(data[:cut]) if cut < len(data) else bytes(data))
    tracemalloc.start()
    try:
        read_gguf(path)
    except InvalidInput as e:
        assert e.message.startswith(f"{path}: not a readable GGUF file")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 4 * MIB, peak


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("name", ["block_count 2**40", "arrays nested 20,000 deep",
                                  "a duplicated key", "a u8 array of 2**40 items"])
def test_seal_of_a_run_whose_log_names_it_records_the_note(cli, store_home, tmp_path: Path,
                                                          name: str) -> None:
    data, says = ATTACKS[name]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(data)
    r = cli("seal", _run(tmp_path, path))
    assert r.exit_code == 0 and "Traceback" not in r.stderr, r.stderr
    shown = json.loads(cli("show", r.stdout.split()[0], "--json").stdout)
    notes = shown["statement"]["predicate"]["identity"]["notes"]
    assert any(n.startswith("checkpoint not read") and says in n for n in notes), notes
