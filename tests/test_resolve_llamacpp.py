"""The llama.cpp corpus: 12 real llama-server logs (`../shared/fixtures/llamacpp-logs`, or
under $REGISTRY_FIXTURES), scored with the corpus' own `score.py` rules through
`registry resolve DIR --json`: no value wrong, no crash, at least 85% of the knowable
values right (an `absent` truth met by silence does not count)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from registry.engines.llamacpp.ggml import file_type_name, kv_bytes
from registry.engines.llamacpp.logs import ModelBlock
from registry.engines.llamacpp.logs.lines import plain
from registry.engines.llamacpp.resolve.weights import decide_weights
from registry.logs.facts import Fact
from tests.conftest import SHARED, corpus_scorer
from tests.corpus_score import score_cases

CORPUS = SHARED / "llamacpp-logs"
needs_corpus = pytest.mark.skipif(not (CORPUS / "truth.json").is_file(),
                                  reason=f"llama.cpp corpus not found at {CORPUS}")


def scorer() -> ModuleType:
    return corpus_scorer(CORPUS)


@needs_corpus
def test_llamacpp_logs_resolve_right_or_not_at_all(cli) -> None:
    cases = json.loads((CORPUS / "truth.json").read_text())
    s = score_cases(cases, lambda case: cli("resolve", CORPUS / case["case"], "--json"),
                    scorer().verdict)
    totals, values, values_right, wrong = s.totals, s.values, s.values_right, s.wrong
    assert not wrong, "\n".join(wrong)
    assert totals["crash"] == 0
    assert values_right >= 0.85 * values, (values_right, values)


@needs_corpus
def test_every_resolved_value_cites_its_line(cli) -> None:
    result = cli("resolve", CORPUS / "04-cuda-t4-gptoss20b-f16-label-mxfp4", "--json")
    fields = json.loads(result.stdout)["fields"]
    lines = (CORPUS / "04-cuda-t4-gptoss20b-f16-label-mxfp4" / "server.log").read_text(
        errors="replace").splitlines()
    for name, field in fields.items():
        if field.get("resolved") is None:
            continue
        assert field.get("evidence"), name
        for ev in field["evidence"]:
            assert ev["text"] in lines[ev["line"] - 1], (name, ev)
    assert fields["precision.weights"]["resolved"] == "MXFP4_MOE"
    assert "label says 'F16'" in fields["precision.weights"]["rule"]


def _block(*lines: tuple[str, dict[str, str]]) -> ModelBlock:
    return ModelBlock(role="target", facts=[Fact(kind=k, line=i + 1, text=k, values=v)
                                            for i, (k, v) in enumerate(lines)])


def test_a_label_the_tensors_contradict_is_not_the_format() -> None:
    """A `Q4_K - Medium` label on a file of q8_0 tensors at 8.5 BPW: q8_0 decides."""
    block = _block(("tensor_type", {"type": "f32", "count": "100"}),
                   ("tensor_type", {"type": "q8_0", "count": "300"}),
                   ("file_type", {"label": "Q4_K - Medium"}),
                   ("file_size", {"size": "8.1", "unit": "GiB", "bpw": "8.52"}))
    assert decide_weights(block).value == "Q8_0"
    mixed = _block(("tensor_type", {"type": "q4_K", "count": "200"}),
                   ("tensor_type", {"type": "q6_K", "count": "30"}),
                   ("file_type", {"label": "Q8_0"}),
                   ("file_size", {"size": "4", "unit": "GiB", "bpw": "4.9"}))
    verdict = decide_weights(mixed)
    assert verdict.value is None and "disagrees" in verdict.rule  # never guessed


def test_file_type_labels_name_llama_cpp_file_types() -> None:
    assert file_type_name("Q4_K - Medium") == "Q4_K_M"
    assert file_type_name("IQ4_NL - 4.5 bpw") == "IQ4_NL"
    assert file_type_name("MXFP4 MoE") == "MXFP4_MOE"
    assert file_type_name("IQ3_S mix - 3.66 bpw") == "IQ3_M"
    assert file_type_name("mostly Q8_0") == "Q8_0"
    assert file_type_name("UD-Q8_K_XL") is None


def test_kv_block_sizes() -> None:
    assert kv_bytes("f16", 64) == 128
    assert kv_bytes("q8_0", 64) == 68
    assert kv_bytes("q4_0", 64) == 36
    assert kv_bytes("q5_1", 32) == 24


def test_line_shapes_are_made_plain() -> None:
    line = plain(7, "[64893] 0.05.562.022 I common_speculative: - n_max=64\r\r\n")
    assert (line.stream, line.level, line.text) == ("64893", "I", "common_speculative: - n_max=64")
    assert plain(1, "\x1b[0msrv  load_model: x\x00").text == "srv  load_model: x"


@needs_corpus
def test_a_launcher_s_settings_are_declared_and_checked(cli, tmp_path: Path) -> None:
    """The lab's launchers print `key=value` settings before the server's first line:
    declared identity, held against what the engine printed."""
    run = tmp_path / "run"
    run.mkdir()
    log = (CORPUS / "02-sycl-b70-gemma4-26b-mtp-faon" / "server.log").read_bytes()
    (run / "server.log").write_bytes(b"ctx_size=8192\ncache_type_k=q8_0\nflash_attn=on\n"
                                     b"extra_llama_args=--spec-type draft-mtp\n" + log)
    fields = json.loads(cli("resolve", run, "--json").stdout)["fields"]
    assert fields["runtime.ctx_size"]["status"] == "confirmed"
    assert fields["spec.method"]["status"] == "confirmed"
    k = fields["precision.kv_cache_k"]
    assert (k["declared"], k["resolved"], k["status"]) == ("q8_0", "f16", "mismatch")
