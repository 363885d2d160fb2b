"""The llama.cpp family beyond llama-server, on real logs other people published
(tests/data/llamacpp-family/, SOURCES.md names each): llama-cli and old `main` timing
blocks, llama-perplexity, old SYCL / CUDA / Metal formats, and a llama.cpp fork's lines.

`registry resolve DIR --log NAME --json` on each case is scored against truth.json: no value
wrong, no crash, and the share of values right is printed (`-s`). Each odd format also has a
test on its real line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from registry.engines.llamacpp.logs.lines import plain
from registry.engines.llamacpp.logs.messages import PATTERNS
from tests.corpus_score import score_cases

DATA = Path(__file__).parent / "data" / "llamacpp-family"
NONE_LIKE = {"", "none", "absent", "null", "no", "disabled"}


def _same(truth: Any, got: Any) -> bool:
    """Numbers within 0.006 (the logs print 2 decimals), words case-insensitively."""
    try:
        return abs(float(truth) - float(got)) <= 0.006
    except (TypeError, ValueError):
        return str(truth).strip().lower() == str(got).strip().lower()


def verdict(truth: Any, got: Any) -> str:
    nothing = got is None or str(got).strip().lower() in NONE_LIKE
    if truth == "absent":
        return "right" if nothing else "WRONG"
    if nothing:
        return "unresolved"
    options = truth if isinstance(truth, list) else [truth]
    return "right" if any(_same(t, got) for t in options) else "WRONG"


def test_family_logs_resolve_right_or_not_at_all(cli, tmp_path: Path) -> None:
    def resolve(case: dict[str, Any]) -> Any:
        run = shutil.copytree(DATA / case["case"], tmp_path / case["case"])
        return cli("resolve", run, "--log", case["log"], "--json")

    cases = json.loads((DATA / "truth.json").read_text())
    s = score_cases(cases, resolve, lambda _, truth, got: verdict(truth, got), cut=300)
    totals, values, values_right, wrong = s.totals, s.values, s.values_right, s.wrong
    print("\n".join(s.misses))
    print(f"llamacpp-family: {totals}; values right {values_right} of {values} "
          f"({100 * values_right / values:.1f}%)")
    assert not wrong, "\n".join(wrong)
    assert totals["crash"] == 0
    assert values_right >= 0.9 * values, (values_right, values)


def test_the_corpus_is_kept_byte_for_byte() -> None:
    import hashlib

    for case in json.loads((DATA / "truth.json").read_text()):
        data = (DATA / case["case"] / case["log"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (case["bytes"], case["sha256"])
    for case in json.loads((DATA / "bench" / "truth.json").read_text()):
        data = (DATA / "bench" / case["case"] / case["file"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (case["bytes"], case["sha256"])
    sources = (DATA / "SOURCES.md").read_text()
    for case in [*json.loads((DATA / "truth.json").read_text()),
                 *json.loads((DATA / "bench" / "truth.json").read_text())]:
        assert case["case"] in sources and case["source_url"] in sources


def _match(kind: str, line: str) -> dict[str, str]:
    found = PATTERNS[kind].search(plain(1, line).text)
    assert found is not None, (kind, line)
    return {k: v for k, v in found.groupdict().items() if v is not None}


def _line(case: str, needle: str) -> str:
    """The real line of a kept log that holds `needle`."""
    path = next((DATA / case).iterdir())
    return next(x for x in path.read_text().splitlines() if needle in x)


def test_old_offload_and_buffer_lines_sycl() -> None:
    case = "04-issue7968-sycl-4gpu-oldformat"
    assert _match("offloaded", _line(case, "offloaded 33/33"))["done"] == "33"
    assert _match("model_buffer", _line(case, "SYCL0 buffer size"))["device"] == "SYCL0"
    assert _match("model_buffer", _line(case, "CPU buffer size"))["device"] == "CPU"


def test_the_sycl_device_table_names_devices() -> None:
    # llama.cpp's README-sycl.md as PR #6151 changed it (github.com/ggml-org/llama.cpp/pull/6151)
    row = ("| 0|[level_zero:gpu:0]|               Intel(R) Arc(TM) A770 Graphics|       1.3|"
           "        512|    1024|     32|    16225243136|")
    got = _match("listed_device", row)
    assert (got["device4"], got["name4"]) == ("level_zero:gpu:0", "Intel(R) Arc(TM) A770 Graphics")


def test_metal_gpu_names_old_and_new() -> None:
    assert _match("metal_gpu", _line("06-issue11083-metal-m4-oldformat", "GPU name"))["name2"] \
        == "Apple M4"
    # github.com/engeldlgado/toshllm/issues/15 (a bundled llama.cpp on Metal)
    new = "ggml_metal_device_init: GPU name:   MTL0 (AMD Radeon PRO W6800X Duo)"
    assert _match("metal_gpu", new) == {"device": "MTL0", "name": "AMD Radeon PRO W6800X Duo"}


def test_a_cache_line_with_a_space_in_its_seqs() -> None:
    # issue 35 quotes the held-out log's `( 4096 cells, 40 layers, 1/ 1 seqs)`; the unspaced
    # form from github.com/LostRuins/koboldcpp/issues/1911
    for seqs in ("1/ 1", "1/1"):
        line = (f"llama_kv_cache: size = 11868.00 MiB ( 33024 cells,  92 layers,  {seqs} seqs), "
                "K (f16): 5934.00 MiB, V (f16): 5934.00 MiB")
        assert _match("kv_size", line)["cells"] == "33024"


def test_context_size_from_the_dry_penalty_line() -> None:
    line = _line("06-issue11083-metal-m4-oldformat", "to ctx_size")
    assert _match("ctx_size_set", line)["n"] == "4096"


def test_cli_timing_block_eval_counts_runs() -> None:
    line = _line("02-issue2237-main-print-timings", "       eval time")
    assert _match("cli_timing", line) == {}
    assert _match("eval", line)["tps"] == "4.43"
    perplexity = _line("01b-ci-b3933-perplexity-excerpt", "       eval time")
    assert PATTERNS["eval"].search(plain(1, perplexity).text) is None  # `inf`: no generation


def test_perplexity_final_estimate() -> None:
    got = _match("ppl_final", _line("01b-ci-b3933-perplexity-excerpt", "Final estimate"))
    assert (got["ppl"], got["err"]) == ("11.2206", "3.51829")
    got = _match("ppl_chunks", _line("01b-ci-b3933-perplexity-excerpt", "calculating"))
    assert (got["chunks"], got["n_ctx"]) == ("1", "128")


@pytest.mark.parametrize("line", [
    "llama_context: Flash Attention was auto, set to enabled",
    "llama_context: Flash Attention not supported, set to disabled",  # quoted by issue 35
])
def test_flash_attention_resolution_lines(line: str) -> None:
    assert _match("fa_resolved", line)["state"] in ("enabled", "disabled")


def test_a_backend_start_is_recognised_as_llama_cpp() -> None:
    assert _match("backend_init", _line("05-pr8035-cuda-2gpu-partial", "ggml_cuda_init")) == {}
    case = "08-jan6099-vulkan-arg-parse-failure"
    assert _match("backend_init", _line(case, "Found 1 Vulkan")) == {}
    assert PATTERNS["arg_env"].search(_line(case, "LLAMA_ARG_")) is not None


def test_an_argument_failure_is_llama_cpp_and_reported(cli, tmp_path: Path) -> None:
    case = "08-jan6099-vulkan-arg-parse-failure"
    shutil.copytree(DATA / case, tmp_path / case)
    out = json.loads(cli("resolve", tmp_path / case, "--log", "excerpt.md", "--json").stdout)
    assert out["fields"]["engine.name"]["resolved"] == "llama.cpp"
    assert out["fields"]["engine.name"]["evidence"][0]["line"] == 4  # ggml_vulkan: Found ...
    failed = [n for n in out["notes"] if n.startswith("failed before loading a model")]
    assert failed and 'handling argument "-c": stoi' in failed[0]
    assert out["errors"]


BENCH = DATA / "bench"


def test_llama_bench_tables_each_row_a_measurement() -> None:
    """Every row of the four real tables (markdown and `-o json`) with its own identity and
    figure; a row the excerpt cut is skipped and said, never half-read."""
    from registry.engines.llamacpp.bench import bench_figures, read_bench

    right = total = 0
    for case in json.loads((BENCH / "truth.json").read_text()):
        table = read_bench(BENCH / case["case"] / case["file"])
        assert table is not None, case["case"]
        assert len(table.skipped) == case["skipped"], table.skipped
        assert len(table.rows) == len(case["rows"]), case["case"]
        for row, truth in zip(table.rows, case["rows"], strict=True):
            got = row.model_dump(include=set(truth))
            total += len(truth)
            right += sum(got[k] == v or (isinstance(v, float) and _same(v, got[k]))
                         for k, v in truth.items())
            assert all(got[k] == v or (isinstance(v, float) and _same(v, got[k]))
                       for k, v in truth.items()), (case["case"], got, truth)
        figures = bench_figures(table)
        assert [f.value for f in figures] == [r.mean_tps for r in table.rows]
        assert all(f.rederived is None and f.agrees is None for f in figures)  # published only
        assert len({f.key for f in figures}) == len(figures)  # each row its own identity
    print(f"llama-bench: {right} of {total} row values right")


def test_llama_bench_refuses_what_is_not_a_table(tmp_path: Path) -> None:
    from registry.engines.llamacpp.bench import parse_test, read_bench

    cases = {"empty.md": "", "prose.md": "| a | b |\n|---|---|\n| 1 | 2 |\n",
             "other.json": '[{"avg": 1}]', "broken.json": "[{", "nan.json":
             '[{"avg_ts": NaN, "n_prompt": 512, "n_gen": 0}]', "deep.json": "[" * 100000}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    assert read_bench(tmp_path / "empty.md") is None
    assert read_bench(tmp_path / "prose.md") is None
    assert read_bench(tmp_path / "other.json") is None
    assert read_bench(tmp_path / "broken.json") is None
    assert read_bench(tmp_path / "deep.json") is None
    nan = read_bench(tmp_path / "nan.json")
    assert nan is not None and not nan.rows and nan.skipped
    assert read_bench(tmp_path / "missing.md") is None
    assert parse_test("pp512+tg128") == (512, 128, 0)
    assert parse_test("tg 128 @ d4096") == (None, 128, 4096)
    assert parse_test("pp") is None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_capsule_s_llama_bench_tables_import_as_published_figures(cli, store_home,
                                                                    tmp_path: Path) -> None:
    """A capsule with a llama-server log and llama-bench's README table and JSON: each row
    is a published figure of the record, keyed by its identity, never re-derived."""
    capsule = tmp_path / "capsule"
    capsule.mkdir()
    (capsule / "server.log").write_text("srv    load_model: loading model 'm.gguf'\n")
    shutil.copy(BENCH / "10-readme-depth-md" / "excerpt.md", capsule / "README.md")
    shutil.copy(BENCH / "11-readme-json" / "llama-bench.json", capsule / "llama-bench.json")
    r = cli("import", capsule, "--json")
    assert r.exit_code == 0, r.stderr
    rid = json.loads(r.stdout)[0]["record"]["id"]
    shown = json.loads(cli("show", rid, "--json").stdout)
    figures = shown["statement"]["predicate"]["published"]
    bench = {(f["source"], f["key"]): f for f in figures if f["metric"].startswith("llama_bench")}
    assert len(bench) == 6
    depth = bench[("README.md", "qwen2 7B Q4_K - Medium | CUDA | ngl=-1 | pp512 @ d512")]
    assert (depth["value"], depth["aggregation"], depth.get("rederived")) == (6425.91, "mean", None)
    assert "not re-derived" in depth["note"] and "18.88" in depth["note"]
    tg = [f for (source, key), f in bench.items() if source == "llama-bench.json"
          and key.endswith("| tg128")]
    assert len(tg) == 1 and "type_k=f16" in tg[0]["key"] and tg[0]["value"] == 118.881588


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_capsule_of_llama_bench_tables_alone_imports_unproven(cli, store_home,
                                                                tmp_path: Path) -> None:
    """A capsule that holds only llama-bench's `-o json` output is published figures
    without a run: imported as an unproven record, never refused as 'no run evidence'."""
    capsule = tmp_path / "capsule"
    capsule.mkdir()
    shutil.copy(BENCH / "11-readme-json" / "llama-bench.json", capsule / "llama-bench.json")
    r = cli("import", capsule, "--json")
    assert r.exit_code == 0, r.stderr
    rid = json.loads(r.stdout)[0]["record"]["id"]
    predicate = json.loads(cli("show", rid, "--json").stdout)["statement"]["predicate"]
    assert {f["metric"] for f in predicate["published"]} == {
        "llama_bench_pp_tok_s", "llama_bench_tg_tok_s"}
    assert all(f.get("rederived") is None for f in predicate["published"])
    assert not predicate.get("results")  # nothing measured here: unproven
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("a table that never came\n")
    r = cli("import", empty)
    assert r.exit_code == 4 and "no run evidence found" in r.stderr


@pytest.mark.parametrize("line, types", [
    # a public llama-server log found by exact-string search (the index names no repository)
    ("0.11.149.637 I spec common_specu: - gpu_layers=-1, cache_k=f16, cache_v=f16, "
     "ctx_tgt=yes, ctx_dft=yes, devices=[default]", ("f16", "f16", "yes")),
    # issue 35 quotes the held-out log's verbosity-3 draft line
    ("common_speculative_impl_draft_mtp: - gpu_layers=-1, cache_k=f16, cache_v=q8_0, "
     "ctx_tgt=yes, ctx_dft=yes, devices=[default]", ("f16", "q8_0", "yes")),
])
def test_draft_cache_types_at_verbosity_3(line: str, types: tuple[str, str, str]) -> None:
    got = _match("spec_cache", line)
    assert (got["k_type"], got["v_type"], got["dft"]) == types


def test_old_vulkan_buffers_named_by_device_description() -> None:
    # two public logs found by exact-string search (the index names no repository)
    for line, device in [
        ("llm_load_tensors: AMD Radeon RX 7900 XTX (RADV NAVI31) buffer size = 18671.19 MiB",
         "AMD Radeon RX 7900 XTX (RADV NAVI31)"),
        ("llm_load_tensors: AMD Radeon Graphics (RADV RENOIR) buffer size =  3820.93 MiB",
         "AMD Radeon Graphics (RADV RENOIR)")]:
        assert _match("model_buffer", line)["device"] == device


def test_pipeline_parallelism_line() -> None:
    # a public log found by exact-string search (the index names no repository)
    line = "llama_new_context_with_model: pipeline parallelism enabled (n_copies=4)"
    assert _match("pipeline", line) == {}
