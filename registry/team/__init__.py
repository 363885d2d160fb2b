"""Team sharing: remotes (folder or ssh), the transfer of objects, and push / pull of a
ledger, every pulled statement verified before a ref moves."""
