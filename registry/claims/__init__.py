"""Claims: what a lab publishes (a figure with its metric, a claimant, the identity
claimed), its lifecycle of signed, append-only events, and its evidence level, derived
from the records and verifications behind it (docs/claims.md)."""
