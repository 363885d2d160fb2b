"""The data contracts between the stages: the run directory an executor writes, the
resolved identity, the figures and their quality, a contract's verdict, and the sealed
record (the in-toto statement). Models only, and the few pure functions that read them."""
