"""Comparing runs: two records field by field (`diff`), the inputs of a diff from a
record or a run directory (`sides`), and many records as one table (`table`)."""
