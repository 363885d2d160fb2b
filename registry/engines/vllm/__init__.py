"""vLLM: its server plug-in and argument tables, its log reader (`logs/`) and its resolver
rules (`resolve/`)."""
