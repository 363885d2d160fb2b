"""Where records live: the content-addressed objects, the git ledger, the SQL index
and the keys that sign them. One module per concept:

- `home`     finding and creating a registry home
- `objects`  content-addressed artifact store (sha256, sharded, atomic writes)
- `keys`     Ed25519 signing keys (private keys outside the ledger)
- `dsse`     DSSE envelopes: PAE, sign, verify
- `git`      plain git on a ledger with hooks, filters and repository config off
- `commits`  signed ledger commits (Registry-Signature over tree, parents, message)
- `ledger`   the git repository of statements, envelopes, keyring and teacher bindings
- `keyring`  which keys may sign: versions signed by a threshold of roots (TUF-style)
- `trust`    the home's root of trust (`trust.json`) and changes to the keyring
- `history`  the whole history checked: signed, linear, append-only, descending
- `signed`   what every reader checks before it shows a record or binding
- `teachers` teacher bindings: signed in the ledger, a table in the index
- `index`    the SQL index (SQLModel tables), a cache rebuilt from the ledger at will
- `lock`     the inter-process lock around index + ledger writes
- `writer`   one record, whole or not at all: objects, index transaction, ledger commit
- `query`    list and show (index + ledger folder), every record checked
- `reindex`  the index rebuilt from a verified ledger alone
- `sources`  the git state of the source trees a run came from (tracked files only)
- `remotes`, `transfer`, `sync`  sharing a ledger and its objects (push, verified pull)
"""
