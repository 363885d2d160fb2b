"""One registry home: the content-addressed objects, the git ledger and the SQL index,
written whole or not at all, and read back only after the signature and trust checks.
Signing itself is registry.signing; sharing a home with a team is registry.team."""
