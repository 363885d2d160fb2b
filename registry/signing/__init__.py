"""Signing, pure: keys, DSSE envelopes, signed ledger commits, the signed keyring and
the checks a reader makes of a signed statement. Bytes in, verdicts out; no home, no
files, no git."""
