"""`registry inspect` and `registry kv`: what a checkpoint asks for, and what its KV costs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import Json

if TYPE_CHECKING:
    from registry.checkpoint.kvmath import KVPayload
    from registry.checkpoint.manifest import Manifest
    from registry.checkpoint.models import CheckpointInfo

KIB = 1024


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)
    app.command("kv")(kv)


def inspect(
    checkpoint: Annotated[Path, typer.Argument(
        help="Checkpoint directory, config.json, or a GGUF file.", show_default=False)],
    manifest: Annotated[bool, typer.Option("--manifest", help="Hash every release file.")
                        ] = False,
    write_identity: Annotated[str | None, typer.Option(
        "--write-identity", metavar="NAME",
        help="Write identities/checkpoints/NAME.toml (implies --manifest).")] = None,
    identities: Annotated[Path | None, typer.Option(
        help="The identities/ folder (default: nearest one above the current directory).")
                          ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing identity document.")
                     ] = False,
    json: Json = False,
) -> None:
    """Show what a checkpoint asks for: attention, weights, KV scheme and KV scales.

    Reads config.json and the safetensors headers only (no torch, no weights loaded); of a
    GGUF file, its header (file type, tensor types, attention shape), read within bounds.

    Example: registry inspect ~/models/laguna-s-2.1/int4 --write-identity laguna-s-2.1-int4
    Example: registry inspect ~/models/qwen3-0.6b-q8_0.gguf
    """
    from registry.checkpoint.inspect import inspect_checkpoint
    from registry.cli.output import console, print_json

    if _is_gguf(checkpoint):
        if manifest or write_identity:
            from registry.errors import UsageError

            raise UsageError("--manifest and --write-identity take a checkpoint directory",
                             hint="a GGUF file is its own release: hash it with sha256sum")
        _gguf(checkpoint, json)
        return
    info = inspect_checkpoint(checkpoint)
    if write_identity:
        from registry.checkpoint import document

        folder = identities or document.find_identities_dir(Path.cwd())
        document.identity_paths(write_identity, folder, force)  # fail before hashing
    release = _manifest(checkpoint, json) if manifest or write_identity else None
    written = None
    if write_identity and release:
        written = document.write_identity(write_identity, info, release, checkpoint, folder,
                                          force=force)
    if json:
        extras = {"manifest": release, "identity": str(written) if written else None}
        print_json({"checkpoint": info} | {k: v for k, v in extras.items() if v is not None})
        return
    _show(info, release)
    if written:
        console.print(f"wrote {written}", highlight=False)


def _manifest(checkpoint: Path, json: bool) -> Manifest:
    from registry.checkpoint.manifest import build_manifest, release_files
    from registry.cli.output import quiet

    if json or quiet():
        return build_manifest(checkpoint)
    from rich.progress import Progress

    total = sum(p.stat().st_size for p in release_files(checkpoint))
    with Progress(transient=True) as bar:
        task = bar.add_task("hashing release files", total=total)
        return build_manifest(checkpoint, lambda n: bar.advance(task, n))


def _is_gguf(path: Path) -> bool:
    """A file named .gguf, or one that starts with GGUF's magic."""
    if not path.is_file():
        return False
    if path.suffix.lower() == ".gguf":
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


def _gguf(path: Path, json: bool) -> None:
    from registry.cli.output import console, print_json, table
    from registry.engines.llamacpp.gguf import read_gguf

    info = read_gguf(path)
    if json:
        print_json({"gguf": info})
        return
    heads = sorted(set(info.kv_heads))
    rows: list[list[object]] = [
        ["architecture", info.architecture], ["file type", info.file_type],
        ["tensors", ", ".join(f"{t} {n}" for t, n in info.tensor_types.items())],
        ["parameters", f"{info.parameters:,} ({info.bits_per_weight:.2f} bits per weight)"],
        ["layers", info.layers], ["KV heads", "/".join(map(str, heads)) or None],
        ["K x V head dims", f"{info.key_length} x {info.value_length}"],
        ["sliding window", f"{info.sliding_window} on {sum(info.swa_layers)} layers"
         if info.sliding_window else None],
        ["context length", info.context_length]]
    console.print(table(info.path, ["", "value"], rows))


def _show(info: CheckpointInfo, release: Manifest | None) -> None:
    from registry.cli.output import console, table

    a, q, s = info.attention, info.quantization, info.kv_scales
    windows = sorted({layer.window for layer in a.layers if layer.window})
    rows: list[list[object]] = [
        ["architecture", info.architecture], ["torch_dtype (not a KV dtype)", info.torch_dtype],
        ["attention layers", f"{len(a.layers)}: {a.global_layers} global, "
                             f"{a.sliding_layers} sliding (window {windows or '-'})"],
        ["KV heads x head dim", f"{a.num_kv_heads} x {a.head_dim}"],
        ["MoE", f"{info.moe.num_experts} experts, {info.moe.experts_per_token} per token"
         if info.moe else None],
        ["weights", q.weights], ["weight scheme", q.summary],
        ["kv_cache_scheme", ", ".join(f"{k}={v}" for k, v in
                                      q.kv_cache_scheme.model_dump(exclude_none=True).items())
         if q.kv_cache_scheme else "none"],
        ["KV scales", f"{s.verdict}: {s.count} tensors, k on {len(s.layers_with_k)} layers, "
                      f"v on {len(s.layers_with_v)} layers"],
        ["tensors", f"{info.tensors.count} in {info.tensors.files} files, "
                    f"{info.tensors.bytes:,} bytes" if info.tensors else "config only"],
    ]
    if release:
        rows.append(["manifest", f"sha256:{release.digest}  ({len(release.files)} files, "
                                 f"{release.total_bytes:,} bytes)"])
    console.print(table(info.path, ["", "value"], rows))
    if s.tensors:
        console.print(table("KV scale tensors", ["name", "dtype", "values"],
                            [[t.name, t.dtype, ", ".join(f"{v:.6g}" for v in t.values[:8])]
                             for t in s.tensors]))


def kv(
    checkpoint: Annotated[Path, typer.Argument(help="Checkpoint directory or config.json.",
                                               show_default=False)],
    kv_dtype: Annotated[str | None, typer.Option(
        help="Storage dtype (bfloat16, fp8_e4m3, ...); default: what the checkpoint asks for.")
                        ] = None,
    draft: Annotated[Path | None, typer.Option(help="Draft checkpoint directory or config.json."
                                               )] = None,
    tp: Annotated[int, typer.Option(help="Tensor-parallel size: KV heads split across ranks.")
                  ] = 1,
    context: Annotated[list[int] | None, typer.Option(
        help="Context length in tokens for a total payload; repeat for several.")] = None,
    json: Json = False,
) -> None:
    """KV-cache payload per token per layer, per token, with the draft, per rank, per context.

    Example: registry kv int4/ --draft dflash-int4/ --kv-dtype bfloat16 --tp 4 --context 8192
    """
    from registry.checkpoint.inspect import inspect_checkpoint
    from registry.checkpoint.kvmath import kv_bytes_per_token
    from registry.cli.output import print_json

    target = inspect_checkpoint(checkpoint)
    drafted = inspect_checkpoint(draft).attention if draft else None
    scheme = target.quantization.kv_cache_scheme
    payload = kv_bytes_per_token(
        target.attention, kv_dtype or _requested_dtype(target), tp=tp, draft=drafted,
        contexts=context or [], scale_strategy=scheme.strategy if scheme else "tensor")
    if json:
        print_json(payload)
        return
    _show_kv(payload)


def _requested_dtype(info: CheckpointInfo) -> str:
    """What the checkpoint asks for: an FP8 scheme's dtype, else its torch_dtype."""
    scheme = info.quantization.kv_cache_scheme
    if scheme and scheme.num_bits == 8 and scheme.type == "float":
        return "fp8_e4m3"
    return info.torch_dtype or "bfloat16"


def _show_kv(p: KVPayload) -> None:
    from registry.cli.output import console, table

    def size(n: float) -> str:
        return f"{n:,.0f} B ({n / KIB:,.2f} KiB)"

    rows: list[list[object]] = [
        ["K+V values per token per layer", f"{p.values_per_token_per_layer:,}"],
        ["per token per layer", size(p.per_token_per_layer_bytes)],
        [f"per token, target ({p.target_layers} layers)", size(p.per_token_bytes)],
        [f"per token, with draft (+{p.draft_layers} layers)", size(p.per_token_bytes_with_draft)],
        [f"per token per rank (TP{p.tp}, {p.kv_heads_per_rank} KV heads)",
         size(p.per_rank_bytes)],
    ]
    if p.scale_note:
        rows.append(["scale metadata", f"{p.scale_note}: {p.scale_bytes_per_rank:,} B per rank"
                     + (f" + {p.scale_bytes_per_token:,} B per token"
                        if p.scale_bytes_per_token else "")])
    rows += [[f"{c.tokens:,} tokens", f"{c.bytes / KIB**2:,.1f} MiB "
              f"({c.bytes_uncapped / KIB**2:,.1f} MiB without windows), "
              f"{c.per_rank_bytes / KIB**2:,.1f} MiB per rank"] for c in p.contexts]
    console.print(table(f"KV payload, {p.kv_dtype} ({p.element_bytes:g} B per element)",
                        ["", "bytes"], rows))
