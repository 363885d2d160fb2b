"""The resolver on the shapes real logs take: per-worker capacity, a default config's
scheduler line, the block size a hybrid model's engine sets, several engine starts, a
start that never got ready, V0 engines, condensed excerpts, spec-decoding phases, other
log file names and a log that is not a vLLM log. Lines are copied from published logs
(the wild corpus and the lab's); each test states what the engine did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.formats.identity import ResolvedIdentity
from registry.resolve import resolve_run
from tests.conftest import FIXTURES

XPU_LOG = FIXTURES / "xpu-logs/qwen-27b-fp8-weights-tp2-server.log"
HEAD = "INFO 08-07 11:12:30 [kv_cache_utils.py:833] "
API = "(APIServer pid=1) INFO 08-07 11:11:03 [api_server.py:1] "


def config(pid: int = 7, **extra: str) -> str:
    items = {"model": "'/m'", "speculative_config": "None", "dtype": "torch.bfloat16",
             "max_seq_len": "4096", "tensor_parallel_size": "4", "pipeline_parallel_size": "1",
             "quantization": "None", "kv_cache_dtype": "auto", **extra}
    body = ", ".join(f"{k}={v}" for k, v in items.items())
    return (f"(EngineCore_DP0 pid={pid}) INFO 08-07 11:11:10 [core.py:76] Initializing a V1 LLM "
            f"engine (v0.10.0) with config: {body}")


READY = API + "Starting vLLM API server 0 on http://0.0.0.0:8000"


def resolve(tmp_path: Path, *lines: str, name: str = "server.log") -> ResolvedIdentity:
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    return resolve_run(tmp_path)


def test_per_worker_capacity_lines_resolve_to_the_smallest(tmp_path: Path) -> None:
    sizes = [855_344, 853_808, 853_808, 861_488]  # case 07: vLLM 0.10, TP4
    r = resolve(tmp_path, config(),
                *(f"{HEAD}GPU KV cache size: {n:,} tokens" for n in sizes),
                f"{API}Engine 000: vllm cache_config_info with initialization after "
                "num_gpu_blocks is: 53363", READY)
    cap = r.fields["kv.capacity_tokens"]
    assert cap.resolved == min(sizes) == 53363 * 16
    assert "smallest of 4" in cap.rule and len(cap.evidence) == 2


def test_capacity_of_separate_engine_processes_that_disagree_is_unresolved(
        tmp_path: Path) -> None:
    r = resolve(tmp_path, config(),
                "(EngineCore_DP0 pid=7) " + HEAD + "GPU KV cache size: 1,000 tokens",
                "(EngineCore_DP1 pid=8) " + HEAD + "GPU KV cache size: 2,000 tokens", READY)
    assert r.fields["kv.capacity_tokens"].resolved is None


def test_the_engine_s_scheduler_line_wins_over_a_default_config_s(tmp_path: Path) -> None:
    line = "INFO 11-28 15:27:15 [scheduler.py:216] Chunked prefill is enabled with " \
           "max_num_batched_tokens={}."
    r = resolve(tmp_path, line.format(2048), API + line.format(8192).split("] ", 1)[1],
                config(), READY)
    field = r.fields["runtime.max_num_batched_tokens"]
    assert field.resolved == 8192 and field.evidence[0].line == 2
    # without a config line to say which is the engine's, disagreeing lines decide nothing
    r = resolve(tmp_path, line.format(2048), line.format(8192), READY)
    assert r.fields["runtime.max_num_batched_tokens"].resolved is None


def test_hybrid_model_block_size_is_the_one_the_engine_set() -> None:
    """The lab's Qwen 3.8 27B (mamba layers): requested 64, the engine set 832."""
    r = resolve_run(XPU_LOG.parent, log_path=Path(XPU_LOG.name))
    field = r.fields["runtime.block_size"]
    assert field.resolved == 832 and "engine set" in field.rule
    assert "Setting attention block size to 832 tokens" in field.evidence[0].text
    assert "'block_size': 64" in XPU_LOG.read_text()  # what was requested


def test_a_start_that_died_then_a_retry_that_served(tmp_path: Path) -> None:
    died = [API + "Chunked prefill is enabled with max_num_batched_tokens=512.",
            config(pid=7, max_seq_len="8192"),
            "(EngineCore_DP0 pid=7) ERROR 09-30 18:29:03 [core.py:718] EngineCore failed to "
            "start."]
    served = [API + "Chunked prefill is enabled with max_num_batched_tokens=2048.",
              config(pid=9, max_seq_len="4096"),
              "(EngineCore_DP0 pid=9) " + HEAD + "GPU KV cache size: 18,400 tokens", READY]
    r = resolve(tmp_path, *died, *served)
    assert (r.value("runtime.max_model_len"), r.value("runtime.max_num_batched_tokens"),
            r.value("kv.capacity_tokens")) == (4096, 2048, 18400)
    assert any("2 engine starts" in n and "reached ready" in n for n in r.notes)
    assert not any(n.startswith("never ready") for n in r.notes)


def test_a_start_that_never_got_ready_says_so(tmp_path: Path) -> None:
    r = resolve(tmp_path, config(),
                "(EngineCore_DP0 pid=7) ERROR 09-30 18:29:03 [core.py:718] EngineCore failed "
                "to start.")
    assert r.value("parallel.tensor") == 4  # what it was configured as is still known
    assert any(n.startswith("never ready") for n in r.notes)


def test_v0_capacity_is_blocks_times_block_size_when_the_concurrency_agrees(
        tmp_path: Path) -> None:
    head = "INFO 11-18 17:10:46 api_server.py:586] "
    lines = [head + "args: Namespace(model='m', block_size=16, max_model_len=None)",
             "INFO 11-18 17:10:54 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) "
             "with config: model='m', dtype=torch.bfloat16, max_seq_len=131072, "
             "tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None, "
             "kv_cache_dtype=auto",
             head + "# GPU blocks: 31284, # CPU blocks: 4096",
             head + "Maximum concurrency for 131072 tokens per request: {}x"]
    r = resolve(tmp_path, *lines[:3], lines[3].format("3.82"))
    assert r.value("kv.capacity_tokens") == 31284 * 16
    assert (r.value("engine.version"), r.value("parallel.tensor"),
            r.value("precision.kv_cache")) == ("0.6.4.post1", 2, "bfloat16")
    r = resolve(tmp_path, *lines[:3], lines[3].format("7.64"))  # block size 32, not 16
    assert r.value("kv.capacity_tokens") is None


def test_v0_cpu_capacity_is_its_cpu_blocks_times_block_size(tmp_path: Path) -> None:
    """The V0 CPU backend prints `# cpu blocks: N` on its own line, no concurrency line."""
    head = "INFO 11-18 17:10:46 cpu_executor.py:186] "
    lines = ["INFO 11-18 17:10:40 api_server.py:586] args: Namespace(model='m', block_size=16)",
             "INFO 11-18 17:10:54 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) "
             "with config: model='m', dtype=torch.bfloat16, max_seq_len=4096, device_config=cpu, "
             "tensor_parallel_size=1, quantization=None, kv_cache_dtype=auto",
             head + "# cpu blocks: 9362"]
    r = resolve(tmp_path, *lines)
    assert r.value("kv.capacity_tokens") == 9362 * 16
    assert "cpu blocks" in (r.fields["kv.capacity_tokens"].rule or "")
    r = resolve(tmp_path, *lines, head + "Maximum concurrency for 4096 tokens per request: 9.00x")
    assert r.value("kv.capacity_tokens") is None  # 149,792 / 4096 is 36.57: not agreeing


@pytest.mark.parametrize("width", [100, 150])
def test_a_config_line_hard_wrapped_by_a_terminal_is_rejoined(tmp_path: Path, width: int
                                                              ) -> None:
    """A terminal copy cut at a fixed width (`...tensor_parallel_si` / `ze=2, ...`): the
    pieces after the first carry no log prefix; rejoined, the config line reads whole."""
    line = ("INFO 11-18 17:10:54 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) "
            "with config: model='m', speculative_config=None, tokenizer='m', "
            "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
            "dtype=torch.bfloat16, max_seq_len=4096, download_dir=None, "
            "load_format=LoadFormat.AUTO, tensor_parallel_size=2, pipeline_parallel_size=1, "
            "quantization=None, kv_cache_dtype=auto, device_config=cuda, seed=0")
    pieces = [line[i:i + width] for i in range(0, len(line), width)]
    assert not any("tensor_parallel_size" in p for p in pieces)  # the name itself is cut
    r = resolve(tmp_path, "INFO 11-18 17:10:40 api_server.py:586] vLLM API server version "
                "0.6.4.post1", *pieces, "INFO 11-18 17:11:01 selector.py:135] Using Flash "
                "Attention backend.")
    assert (r.value("parallel.tensor"), r.value("runtime.max_model_len"),
            r.value("precision.kv_cache")) == (2, 4096, "bfloat16")


@pytest.mark.parametrize(("quantization", "kv"), [
    ("None", "bfloat16"), ("awq", "bfloat16"), ("awq_marlin", "bfloat16"),
    ("bitsandbytes", "bfloat16"), ("mxfp4", "bfloat16"), ("gptq_marlin", "bfloat16"),
    ("fp8", "bfloat16"), ("quark", "bfloat16"),
    ("compressed-tensors", None), ("modelopt", None), ("hqq", None)])
def test_auto_kv_without_a_checkpoint(tmp_path: Path, quantization: str, kv: str | None) -> None:
    """`quantization=None`: no quantization_config, so no KV scheme: auto is the model
    dtype. vLLM reads no KV scheme from AWQ, GPTQ, bitsandbytes, MXFP4, fp8 or quark
    configs either (registry/engines/vllm/resolve/kv.py cites its source); compressed-
    tensors and modelopt may carry one, and a method not checked is never guessed:
    without the checkpoint, unresolved."""
    r = resolve(tmp_path, config(quantization=quantization), READY)
    assert r.value("precision.kv_cache") == kv


def test_a_condensed_excerpt(tmp_path: Path) -> None:
    """Case 25: a markdown page's log block, the config line elided with `...`."""
    r = resolve(tmp_path, "INFO  Using fp8_e4m3 data type to store kv cache.",
                "INFO  Chunked prefill is enabled with max_num_batched_tokens=8192.",
                "INFO  Initializing a V1 LLM engine (v0.26.0) with config: ... "
                "tensor_parallel_size=2 ...",
                "INFO  GPU KV cache size: 903,602 tokens",
                "INFO  Maximum concurrency for 262,144 tokens per request: 3.45x",
                "INFO  Starting vLLM server on http://0.0.0.0:8010")
    assert (r.value("engine.version"), r.value("parallel.tensor"), r.value("precision.kv_cache"),
            r.value("kv.capacity_tokens"), r.value("runtime.max_model_len"),
            r.value("runtime.max_num_batched_tokens")) == ("0.26.0", 2, "fp8_e4m3", 903602,
                                                           262144, 8192)
    assert r.value("parallel.pipeline") is None  # elided: not guessed


def test_a_draft_kv_of_auto_is_not_a_format(tmp_path: Path) -> None:
    spec = ("SpeculativeConfig(method='dflash', model='/d', num_spec_tokens=15)")
    r = resolve(tmp_path, API + "non-default args: {'model': '/m', 'speculative_config': "
                "{'method': 'dflash', 'model': '/d', 'num_speculative_tokens': 15, "
                "'kv_cache_dtype': 'auto'}}",
                config(speculative_config=spec, kv_cache_dtype="fp8_ds_mla"), READY)
    draft = r.fields["precision.draft_kv_cache"]
    assert draft.resolved is None and "auto" in draft.rule


def test_spec_figures_come_from_between_the_harness_scrapes(tmp_path: Path) -> None:
    spec = API + "SpecDecoding metrics: Accepted: {} tokens, Drafted: {} tokens"
    scrape = '(APIServer pid=1) INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK'
    r = resolve(tmp_path, config(speculative_config="SpeculativeConfig(method='mtp', "
                                                    "num_spec_tokens=3)"), READY,
                spec.format(9, 9), scrape, spec.format(2, 30), spec.format(4, 30), scrape,
                spec.format(1, 3))
    stats = r.spec_decode
    assert stats is not None
    assert (stats.accepted_tokens, stats.draft_tokens, stats.drafts) == (6, 60, 20)
    assert "between the /metrics scrapes at lines 4 and 7" in stats.source
    notes = [n for n in r.notes if n.startswith("speculative decoding by phase")]
    assert len(notes) == 1 and "9/9" in notes[0] and "6/60" in notes[0] and "1/3" in notes[0]


def test_log_names_default_search_and_log_option(tmp_path: Path, cli) -> None:
    lines = [config(), READY]
    r = resolve(tmp_path, *lines, name="run7-server.log")
    assert r.value("parallel.tensor") == 4
    assert r.fields["parallel.tensor"].evidence[0].source == "run7-server.log"
    (tmp_path / "other-server.log").write_text("x\n")
    with pytest.raises(InvalidInput, match="several logs match"):
        resolve_run(tmp_path)
    result = cli("resolve", tmp_path, "--log", "run7-server.log", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["fields"]["parallel.tensor"]["resolved"] == 4
    result = cli("resolve", tmp_path, "--log", "nope.log")
    assert result.exit_code == 4 and "no such log file" in result.stderr
    assert "Traceback" not in result.stderr


def test_stdout_log_in_an_arm_directory(tmp_path: Path) -> None:
    r = resolve(tmp_path, config(), READY, name="server.stdout.log")
    assert r.value("engine.version") == "0.10.0"


def test_a_log_with_no_vllm_line_says_it_is_unreadable(tmp_path: Path, cli) -> None:
    r = resolve(tmp_path, "Collecting torch", "Successfully installed torch-2.7.1")
    assert any(n.startswith("unreadable log: server.log") for n in r.notes)
    result = cli("resolve", tmp_path)
    assert result.exit_code == 0 and "unreadable log" in result.stdout
