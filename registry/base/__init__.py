"""The bottom of the stack: canonical JSON, bounded parsing of untrusted documents, atomic
file writes, file hashing, paths confined to their folder, and the one frozen model base.
Nothing here knows what a run or a record is."""
