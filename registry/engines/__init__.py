"""The engines: `base.py` is what every engine provides (the `EnginePlugin` interface),
`plugin.py` finds them; each engine is one folder (`vllm/`, `llamacpp/`) holding
everything the registry knows about it (docs/engines.md)."""
