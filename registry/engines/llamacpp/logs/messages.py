"""What llama-server prints that carries identity: one pattern per message kind, matched
against a plain line (registry.engines.llamacpp.logs.lines). Builds from b4400 (Dec 2024) to
b10433 print these; older spellings sit beside the newer ones in one pattern."""

from __future__ import annotations

import re

NUM = r"[\d.]+"

PATTERNS: dict[str, re.Pattern[str]] = {name: re.compile(rx) for name, rx in {
    # `build: 8179 (ecbcb7ea9) with ...`, `build_info: b8988-5cf016643`,
    # `build 10433 (1ff6bcb6c) with IntelLLVM ...`, `version: 9769 (c926ad098)`
    # old: `main: build = 3600 (2fb92678)`; a source build without git: `(unknown)`
    # `cmn  common_param: common_params_print_info: build 10433 (1ff6bcb6c) ...` (2026, -lv 4)
    "build": r"(?:^(?:\w+: )?(?:build_info|build|version)|^cmn\s+\w+: \w+: build)\s*[:=]?\s+"
             r"b?(?P<number>\d+)\s*"
             r"(?:[-(]\s*(?:(?P<commit>[0-9a-f]{7,40})|[^)\s]*)\)?)?(?:\s|$)",
    # a new server start (one per `llama-server` process)
    "start": r"load_model: loading model '(?P<path>[^']*)'",
    "draft_load": r"loading draft model '(?P<path>[^']*)'",
    "mtp_path": r"MTP assistant path '(?P<path>[^']*)' \(loaded into target model\)",
    "model_meta": r"^llama_model_loader: loaded meta data with \d+ key-value pairs and "
                  r"(?P<tensors>\d+) tensors from (?P<path>.*?)(?: \(version .*\))?$",
    "tensor_type": r"^llama_model_loader: - type\s+(?P<type>\w+):\s+(?P<count>\d+) tensors",
    # `print_info: file type   = Q4_K - Medium`; old: `llm_load_print_meta: model ftype = Q8_0`
    "file_type": r"^(?:print_info|llm_load_print_meta): (?:file type|model ftype)\s+=\s+"
                 r"(?P<label>.+?)\s*$",
    "file_size": rf"^(?:print_info|llm_load_print_meta): (?:file size|model size)\s+=\s+"
                 rf"(?P<size>{NUM}) (?P<unit>[KMG]iB) \((?P<bpw>{NUM}) BPW\)",
    "offloaded": r"^(?:load_tensors|llm_load_tensors): offloaded (?P<done>\d+)/(?P<of>\d+) "
                 r"layers to GPU",
    # old builds: `llm_load_tensors:      SYCL0 buffer size =  1100.93 MiB` (no "model"); old
    # Vulkan builds name the buffer by the device's description (`AMD Radeon RX 580 ...`)
    "model_buffer": rf"^(?:load_tensors|llm_load_tensors):\s+(?P<device>\S.*?) (?:model )?buffer "
                    rf"size =\s+(?P<mib>{NUM}) MiB",
    "using_device": r"using device (?P<device>\S+) \((?P<name>[^()]*(?:\([^()]*\)[^()]*)*)\)",
    # `  Device 0: Tesla T4, compute capability 7.5, ...`; `- Vulkan0 : AMD Radeon (TM) ...`
    # `- SYCL0   : Intel(R) Arc(TM) Pro B70 Graphics (32656 MiB, ...)` after `device_info:`;
    # a Meta device's members: `- device 0: SYCL0 (Intel(R) Arc(TM) Pro B70 Graphics)`
    "listed_device": r"(?:^Device (?P<index>\d+): (?P<name>[^,]+),|(?:^|:\s+)- (?P<device>[A-Za-z]+"
                     r"\d+)\s*: (?P<name2>.+?) \(\d+ MiB|- device \d+: (?P<device3>\S+) "
                     r"\((?P<name3>[^()]*(?:\([^()]*\)[^()]*)*)\)$"
                     # the SYCL table: `| 0|[level_zero:gpu:0]|   Intel(R) Arc(TM) A770 Graphics|`
                     r"|^\|\s*(?P<index4>\d+)\|\s*\[(?P<device4>[^\]]+)\]\|\s*(?P<name4>[^|]+?)\|)",
    # Metal: `ggml_metal_device_init: GPU name:   MTL0 (Apple M5 Pro)`; old builds
    # `ggml_metal_init: GPU name:   Apple M4`
    "metal_gpu": r"^ggml_metal\w*: GPU name:\s+(?:(?P<device>MTL\d+) \((?P<name>.+)\)|"
                 r"(?P<name2>.+?))\s*$",
    "meta_device": r"creating a Meta device for tensor parallelism from (?P<count>\d+) devices",
    "context_begin": r"^llama_context: constructing llama_context",
    # `llama_context: n_ctx = 8192`; old: `llama_new_context_with_model: n_ctx_per_seq = 4096`
    "context_setting": r"^(?:llama_context|llama_new_context_with_model):\s+(?P<key>n_seq_max|"
                       r"n_ctx|n_ctx_seq|n_ctx_per_seq|n_batch|n_ubatch|flash_attn|kv_unified)"
                       r"\s+=\s+(?P<value>\S+)\s*$",
    # `auto` resolved, or an explicit `on` the device cannot honour
    "fa_resolved": r"Flash Attention (?P<why>was auto|not supported), set to "
                   r"(?P<state>enabled|disabled)",
    # a layer split over several devices: `llama_context: pipeline parallelism enabled`
    "pipeline": r"pipeline parallelism enabled",
    # llama-cli's (and old main's) own line: `generate: n_ctx = 512, n_batch = 512, ...`
    "generate": r"^generate: n_ctx = (?P<n_ctx>\d+), n_batch = (?P<n_batch>-?\d+)",
    # `common_init_from_params: setting dry_penalty_last_n to ctx_size = 4096`: the
    # context's size, printed where no llama_context line is
    "ctx_size_set": r"\bto ctx_size = (?P<n>\d+)\b",
    "iswa": r"^llama_kv_cache\w*_iswa: creating\s+(?P<which>non-SWA|SWA) KV cache",
    "kv_size": rf"^llama_kv_cache\w*: size =\s+(?P<total>{NUM}) MiB \(\s*(?P<cells>\d+) cells,"
               rf"\s+(?P<layers>\d+) layers,\s+(?P<seqs>\d+/\s*\d+|\d+) seqs\), "
               rf"K \((?P<k_type>\w+)\):\s+(?P<k_mib>{NUM}) MiB, "
               rf"V \((?P<v_type>\w+)\):\s+(?P<v_mib>{NUM}) MiB",
    "kv_init": r"^llama_kv_cache\w*: kv_size = (?P<cells>\d+), .*type_k = '(?P<k_type>\w+)', "
               r"type_v = '(?P<v_type>\w+)', n_layer = (?P<layers>\d+)",
    "kv_self": rf"KV self size\s+=\s+(?P<total>{NUM}) MiB, K \((?P<k_type>\w+)\):\s+"
               rf"(?P<k_mib>{NUM}) MiB, V \((?P<v_type>\w+)\):\s+(?P<v_mib>{NUM}) MiB",
    "v_pad": r"padding V cache to (?P<values>\d+)",
    "kv_buffer": rf"^llama_kv_cache\w*:\s+(?P<device>\S+) KV buffer size =\s+(?P<mib>{NUM}) MiB",
    "parallel_auto": r"n_parallel is set to auto, using n_parallel = (?P<n>\d+) and "
                     r"kv_unified = (?P<unified>\w+)",
    "n_slots": r"initializing(?: slots)?, n_slots = (?P<n>\d+)(?:, n_ctx_slot = (?P<ctx>\d+))?"
               r"(?:, kv_unified = '?(?P<unified>\w+)'?)?",
    "slot_ctx": r"new slot,? n_ctx(?:_slot)? = (?P<ctx>\d+)",
    "gpu_layers_user": r"n_gpu_layers already set by user to (?P<n>-?\d+)",
    "spec_impl": r"adding speculative implementation '(?P<method>[^']+)'",
    "spec_limits": r"(?:^|\s|-\s)n_max\s*=\s*(?P<n_max>\d+),\s*n_min\s*=\s*(?P<n_min>\d+)",
    # the draft context's own settings (printed at -lv 3, where no llama_context line is):
    # `common_speculative_impl_draft_mtp: - gpu_layers=-1, cache_k=f16, cache_v=q8_0,
    # ctx_tgt=yes, ctx_dft=yes, devices=[default]`
    "spec_cache": r"(?:^|\s)-\s*gpu_layers=-?\d+, cache_k=(?P<k_type>\w+), "
                  r"cache_v=(?P<v_type>\w+), ctx_tgt=\w+, ctx_dft=(?P<dft>\w+)",
    "spec_none": r"(?P<why>no implementations specified for speculative decoding|speculative "
                 r"decoding not supported by this context)",
    "ready": r"(?:main|llama_server): (?:model loaded|server is listening|listening on)",
    # `slot print_timing: id  0 | task 0 | ` (the two-line form ends here)
    "timing_task": r"print_timing: id\s+\d+ \| task (?P<task>-?\d+) \|",
    # llama-cli / llama-perplexity (`llama_perf_context_print:`, old `llama_print_timings:`):
    # one block per process; its eval line counts `runs`, not `tokens`
    "cli_timing": r"^(?:llama_print_timings|llama_perf_context_print):",
    "prompt_eval": rf"prompt eval time =\s+(?P<ms>{NUM}) ms /\s+(?P<tokens>\d+) tokens \(.*?"
                   rf"(?P<tps>{NUM}) tokens per second\)",
    "eval": rf"(?<!prompt )eval time =\s+(?P<ms>{NUM}) ms /\s+(?P<tokens>\d+) "
            rf"(?:tokens|runs)\s+\(.*?"
            rf"(?P<tps>{NUM}) tokens per second\)",
    "acceptance": rf"draft acceptance = (?P<rate>{NUM}) \(\s*(?P<accepted>\d+) accepted /\s*"
                  rf"(?P<generated>\d+) generated\)",
    # llama-perplexity: `perplexity: calculating perplexity over 655 chunks, n_ctx=512, ...`
    # and `Final estimate: PPL = 5.9066 +/- 0.03336` (a quality figure, never a speed)
    "ppl_chunks": r"perplexity: calculating perplexity over (?P<chunks>\d+) chunks, "
                  r"n_ctx=(?P<n_ctx>\d+)",
    "ppl_final": rf"Final estimate: PPL = (?P<ppl>{NUM}) \+/- (?P<err>{NUM})",
    # the backend's own start, and `LLAMA_ARG_*` settings: llama.cpp's even when it fails
    # before loading anything (an argument it could not parse)
    "backend_init": r"^ggml_(?:cuda|metal|sycl|vulkan|hip|opencl)_init: |^ggml_vulkan: Found "
                    r"\d+ Vulkan devices|^ggml_init_cublas: ",
    "arg_env": r"\bLLAMA_ARG_[A-Z0-9_]+\b",
    "error": r"(?i)(?:^E$|error|abort|failed to load|exception)",
}.items()}

# Lines that say "error" or "failed" and are normal (the README of the corpus lists them).
NORMAL_ERRORS = re.compile(r"this warning is normal|failed to mlock|HEAD failed|"
                           r"ggml_print_backtrace|error_log|n_errors|errors? = 0")

# Kinds that belong to the next server start when printed before its model loads.
PREAMBLE = frozenset({"build", "listed_device", "parallel_auto", "backend_init", "metal_gpu"})

# A llama-server log: any of these (a vLLM log prints none of them); the plug-in's log
# signature.
SIGNATURE = (r"llama_model_loader: |load_tensors: |llama_context: |load_model: loading "
             r"model '|print_timing: |llama_server: |build_info: b\d+|llama_kv_cache|"
             r"llama_new_context_with_model|ggml_(?:cuda|metal|sycl|vulkan)_init|"
             r"main: server is listening|llama_print_timings: |llama_perf_context_print: |"
             r"llm_load_tensors: |LLAMA_ARG_[A-Z0-9_]+|ggml_init_cublas: |"
             r"ggml_vulkan: Found \d+ Vulkan devices")
SIGNATURES = re.compile(SIGNATURE)
