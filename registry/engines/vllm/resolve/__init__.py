"""vLLM's resolver rules: its config line and args, the identity fields they prove, the
KV precision and capacity cross-check, speculative decoding acceptance."""
