"""A minimal valid recipe as TOML text, for tests that break it one way at a time."""

MINIMAL = """\
schema = "registry.recipe/v1"
name = "t"
lane = "t"

[model]
path = "/models/tiny"

[precision]
weights = "bfloat16"
kv_cache = "bfloat16"

[hardware]
platform = "cpu"

[benchmark]
[[benchmark.suites]]
name = "s"
path = "suite.jsonl"
"""
