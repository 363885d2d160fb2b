"""`precision.activations`: what the target's quantized matmuls take as input.

A method name is not an activation precision: vLLM's `fp8` method quantizes activations
to fp8 on hardware with fp8 matmuls, and runs W8A16 where a device or a build says so
(the XPU build's `VLLM_XPU_FP8_BLOCK_W8A16=1`). So a logged `quantization=fp8` proves
fp8 *weights* and leaves the activations unresolved unless evidence says which: that
variable's value in the launch, the checkpoint's quantization config (a scheme's
`input_activations`), or a method that quantizes activations wherever it runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from registry.checkpoint.quant import WEIGHT_ONLY
from registry.engines.vllm.logs.messages import Kind
from registry.engines.vllm.resolve.fields import Fields
from registry.formats.identity import Evidence
from registry.formats.rundir import LAUNCH
from registry.resolve.inputs import Checkpoints

W8A16_ENV = "VLLM_XPU_FP8_BLOCK_W8A16"
# methods that quantize activations wherever they run (per-token fp8 activations)
QUANTIZES_ACTIVATIONS = {"ptpc_fp8": "fp8"}
LAUNCH_LIMIT = 1 << 20  # a launch file is argv and env: a larger one is not read
ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")


def launch_env(run_dir: Path) -> dict[str, tuple[str, Evidence]]:
    """`NAME -> (value, evidence)` from the run's launch file: a launch plan's `env`, or
    `NAME=value` words of its argv (`docker run --env NAME=value`). Anything unreadable
    is no evidence (the launch is checked by seal, not here)."""
    path = run_dir / LAUNCH
    try:
        if not path.is_file() or path.stat().st_size > LAUNCH_LIMIT:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if isinstance(data, list):  # a launch kept as its argv alone
        data = {"argv": data}
    if not isinstance(data, dict):
        return {}
    pairs: list[tuple[str, str]] = []
    env = data.get("env")
    if isinstance(env, dict):
        pairs += [(str(k), str(v)) for k, v in env.items() if isinstance(v, str | int)]
    argv = data.get("argv")
    if isinstance(argv, list):
        pairs += [(m.group(1), m.group(2)) for w in argv
                  if isinstance(w, str) and (m := ASSIGNMENT.match(w))]
    return {name: (value, Evidence(source=LAUNCH, text=f"{name}={value}"))
            for name, value in pairs}


def activation_fields(f: Fields, checkpoints: Checkpoints,
                      launch: dict[str, tuple[str, Evidence]]) -> None:
    method, method_ev = f.log.setting("quantization")
    dtype, dtype_ev = f.log.setting("dtype")
    dtype = dtype.removeprefix("torch.") if dtype else None
    ck = checkpoints.target
    ck_used = ck is not None and (method is None or method == ck.quantization.method)
    fp8 = method == "fp8" or (ck_used and ck is not None and ck.quantization.method == "fp8")
    name = "precision.activations"
    if f.log.config_fact is None:
        f.put(name, None, "no engine config line")
        return
    if fp8 and _w8a16(f, launch, name, dtype, method_ev, dtype_ev):
        return
    if ck_used and ck is not None and ck.quantization.method is not None:
        q = ck.quantization
        f.put(name, q.activations, f"checkpoint quantization_config: {q.summary}", method_ev,
              Evidence(source=ck.path, text=q.summary),
              note=None if q.activations else f"the {q.method} config does not say whether "
              "activations are quantized")
    elif method in QUANTIZES_ACTIVATIONS:
        f.put(name, QUANTIZES_ACTIVATIONS[method], f"quantization={method} quantizes "
              "activations on every device", method_ev)
    elif method in WEIGHT_ONLY:
        f.put(name, dtype, f"quantization={method} quantizes weights only: activations in "
              "the model dtype", method_ev, dtype_ev)
    elif method is None:
        f.put(name, dtype, "no quantization: activations in the model dtype", dtype_ev)
    else:
        f.put(name, None, f"engine config line quantization={method}", method_ev,
              note=(f"{method} quantizes activations on some devices and not others (W8A16 "
                    "fallbacks); nothing here says which: " if method == "fp8" else
                    f"the method name {method} does not say whether activations are "
                    "quantized: ") + "the launch's environment or the checkpoint's quantization "
                   "config (--checkpoint) decides")


def _w8a16(f: Fields, launch: dict[str, tuple[str, Evidence]], name: str, dtype: str | None,
           *ev: Evidence | None) -> bool:
    """True when the XPU W8A16 switch decided the field (resolved, or named without a
    value: then unresolved, with what would decide it)."""
    named = [fact for fact in f.log.all(Kind.unknown_env) if fact.values["name"] == W8A16_ENV]
    logged = f.log.evidence(named[0]) if named else None
    if W8A16_ENV in launch:
        value, launch_ev = launch[W8A16_ENV]
        if value.strip() != "1":
            return False
        f.put(name, dtype, f"{W8A16_ENV}=1 in the launch (fp8 weights, activations in the "
              "model dtype: W8A16)" + ("; the engine log names the variable" if logged else ""),
              launch_ev, logged, *ev)
        return True
    if logged is None:
        return False
    f.put(name, None, f"the engine log names {W8A16_ENV} (set, its value not logged)",
          logged, *ev, note=f"{W8A16_ENV}=1 runs fp8 weights with {dtype or 'model-dtype'} "
          "activations (W8A16); the launch's environment (launch.json) says its value")
    return True
