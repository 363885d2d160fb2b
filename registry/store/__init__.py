"""Where records live: the content-addressed objects, the git ledger, the SQL index
and the keys that sign them. One module per concept:

- `home`    finding and creating a registry home
- `objects` content-addressed artifact store (sha256, sharded, atomic writes)
- `keys`    Ed25519 signing keys (private keys outside the ledger)
- `dsse`    DSSE envelopes: PAE, sign, verify
- `ledger`  the git repository of statements, envelopes and trusted keys
- `index`   the SQL index (SQLite or PostgreSQL), rebuilt from the ledger at will
- `lock`    the inter-process lock around index + ledger writes
- `writer`  one record, whole or not at all: objects, index transaction, ledger commit
- `query`   list and show (index + ledger folder; no git)
- `reindex` the index rebuilt from the ledger alone
- `sources` the git state of the source trees a run came from
"""
