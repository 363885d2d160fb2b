"""Checkpoint inspection without torch: `inspect.py` reads what a checkpoint asks for,
`manifest.py` hashes its release files; `models.py` is the contract for readers."""
