"""Generate the long-context prompt suites for the Laguna service lane, deterministically.

    python tools/make_suites.py [--out recipes/suites] [--check]

Each suite is JSONL, one `{"id", "prompt"}` per line. Lengths are nominal (about four
characters per token, ~90% of the suite's context so the answer fits); the exact
count depends on the tokenizer and is measured by the engine (`prompt_tokens`).
Prompt ids are referenced by the recipe's quality gates (`needle-32k`,
`structured-tool-call`), so they are fixed. `--check` regenerates in memory and
fails if a committed file differs.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

VERSION = "v1"
CHARS_PER_TOKEN = 4
FILL = 0.9
NEEDLE = "Remember this fact: the vault code is 7431."
SUBJECTS = ["scheduler", "cache", "tokenizer", "allocator", "router", "sampler", "loader",
            "profiler", "gateway", "replica", "worker", "indexer", "ledger", "planner"]
VERBS = ["retries", "evicts", "batches", "flushes", "rebalances", "validates", "compacts",
         "prefetches", "throttles", "snapshots", "replays", "shards"]
OBJECTS = ["stale blocks", "pending requests", "cold pages", "expired leases", "queued jobs",
           "partial writes", "old checkpoints", "idle sessions", "hot keys", "draft tokens"]
WHEN = ["after a timeout", "when memory runs low", "every ten seconds", "before shutdown",
        "on the first request", "when a peer joins", "during a rolling restart",
        "once the queue drains", "if the checksum fails", "at the end of each epoch"]


def chars(context_tokens: int) -> int:
    return int(context_tokens * FILL * CHARS_PER_TOKEN)


def prose(rng: random.Random, size: int) -> str:
    """Plausible operations notes, sentence by sentence, up to `size` characters."""
    out: list[str] = []
    total = 0
    while total < size:
        s = (f"The {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
             f"{rng.choice(WHEN)}.")
        out.append(s)
        total += len(s) + 1
    return " ".join(out)


def needle(context_tokens: int, depth: float) -> str:
    rng = random.Random(f"needle-{context_tokens}-{VERSION}")
    size = chars(context_tokens) - 400
    cut = int(size * depth)
    haystack = prose(rng, size)
    cut = haystack.index(". ", cut) + 2
    return ("Below are operations notes. Read them carefully.\n\n" + haystack[:cut] + NEEDLE + " "
            + haystack[cut:] + "\n\nQuestion: what is the vault code? Answer with the one "
            "sentence from the notes that states it, word for word.")


def tool(rng: random.Random, index: int) -> dict[str, object]:
    subject = rng.choice(SUBJECTS)
    return {"name": f"{subject}_{rng.choice(VERBS)}_{index}",
            "description": f"Ticket {1000 + index}: ask the {subject} to act on "
                           f"{rng.choice(OBJECTS)} {rng.choice(WHEN)}.",
            "parameters": {"type": "object", "required": ["target"], "properties": {
                "target": {"type": "string"}, "limit": {"type": "integer", "minimum": 1},
                "dry_run": {"type": "boolean"}}}}


def structured_tool_call(context_tokens: int) -> str:
    rng = random.Random(f"tools-{context_tokens}-{VERSION}")
    tools: list[dict[str, object]] = []
    while len(json.dumps(tools)) < chars(context_tokens) - 600:
        tools.append(tool(rng, len(tools)))
    target = tools[len(tools) // 2]
    return ("You can call exactly one of these tools (JSON schemas):\n"
            + json.dumps(tools, indent=None) + "\n\nTask: handle " + str(target["description"])
            + " Use target \"primary\" and limit 3.\nRespond with only a JSON object with the "
            'keys "name" (the tool name) and "arguments" (an object). No prose.')


def code_review(context_tokens: int) -> str:
    rng = random.Random(f"code-{context_tokens}-{VERSION}")
    functions: list[str] = []
    size = chars(context_tokens) - 500
    planted = False
    while sum(len(f) for f in functions) < size:
        i = len(functions)
        subject = rng.choice(SUBJECTS)
        body = (f"def {subject}_{i}(items, limit={rng.randint(1, 64)}):\n"
                f'    """The {subject} {rng.choice(VERBS)} {rng.choice(OBJECTS)}."""\n'
                f"    kept = [x for x in items if x is not None]\n"
                f"    return kept[:limit]\n")
        if not planted and sum(len(f) for f in functions) > size * 0.6:
            planted = True  # one off-by-one, 60% of the way in
            body = body.replace("return kept[:limit]", "return kept[:limit - 1]")
        functions.append(body)
    return ("Review this Python module. Every function should return at most `limit` items "
            "and exactly `limit` when enough are given.\n\n```python\n" + "\n\n".join(functions)
            + "```\n\nWhich function breaks the rule, and why?")


SUITES: dict[str, list[tuple[str, Callable[[], str]]]] = {
    "long-context-8k": [("needle-8k", lambda: needle(8192, 0.5)),
                        ("structured-tool-call", lambda: structured_tool_call(8192))],
    "long-context-32k": [("needle-32k", lambda: needle(32768, 0.37)),
                         ("code-review-32k", lambda: code_review(32768))],
    "long-context-64k": [("needle-64k", lambda: needle(65536, 0.73))],
}


def render(name: str) -> bytes:
    lines = [json.dumps({"id": pid, "prompt": make()}, ensure_ascii=False) + "\n"
             for pid, make in SUITES[name]]
    return "".join(lines).encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent.parent / "recipes" / "suites")
    parser.add_argument("--check", action="store_true", help="fail if a file differs")
    args = parser.parse_args(argv)
    stale = []
    for name in SUITES:
        path = args.out / f"{name}-{VERSION}.jsonl"
        data = render(name)
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(path)
            continue
        path.write_bytes(data)
        print(f"wrote {path} ({len(data)} bytes)")
    for path in stale:
        print(f"differs from the generator: {path}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
