"""`registry init`, `keys init|list|export|trust`, `verify`, `list`, `show`, `reindex`.

Every command takes `--home DIR`; without it the home is `$REGISTRY_HOME`, else the
nearest `.registry/` above the current directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli import new_app
from registry.errors import ExitCode, RegistryError

if TYPE_CHECKING:
    from registry.store.home import Home
    from registry.store.index import RecordRow
    from registry.store.query import ShownRecord

HomeOpt = Annotated[Path | None, typer.Option(
    "--home", show_default=False,
    help="Registry home (default: $REGISTRY_HOME, else the nearest .registry/ above here).")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]

keys_app = new_app("Signing keys: create, list, export, trust.")


class UsageError(RegistryError):
    exit_code = ExitCode.USAGE


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.add_typer(keys_app, name="keys")
    app.command()(verify)
    app.command("list")(list_records)
    app.command()(show)
    app.command()(reindex)


def _home(home: Path | None) -> Home:
    from registry.store.home import find_home

    return find_home(home)


def init(
    directory: Annotated[Path | None, typer.Argument(
        show_default=False,
        help="Project folder; the home is DIR/.registry (default: here).")] = None,
    home: HomeOpt = None,
) -> None:
    """Create a registry home: objects/, ledger/ (git) and the index; trust your key.

    Example: registry init
    """
    import os

    from registry.cli.output import console
    from registry.store.home import DIRNAME, ENV_HOME, init_home
    from registry.store.keys import default_keyid, keys_dir, local_keys, trust

    if home and directory:
        raise UsageError("give the project folder or --home, not both")
    if directory is not None:  # named here: it wins over $REGISTRY_HOME
        root = directory / DIRNAME
    else:
        root = home or Path(os.environ.get(ENV_HOME) or Path.cwd() / DIRNAME)
    created = init_home(root)
    console.print(f"registry home: {created.root}", highlight=False)
    mine = [k for k in local_keys() if k.keyid == default_keyid()]
    if mine:
        keyid, new = trust(created, mine[0].public_pem.encode(), keys_dir())
        state = "trusted" if new else "already trusted"
        console.print(f"{state} key {keyid[:16]}", highlight=False)
    else:
        console.print("no signing key yet: registry keys init", highlight=False)


@keys_app.command("init")
def keys_init(home: HomeOpt = None, json: Json = False) -> None:
    """Create an Ed25519 signing key (private key 0600, outside the ledger) and trust it.

    Example: registry keys init
    """
    from registry.cli.output import console, print_json
    from registry.store.keys import create_key, trust

    key = create_key()
    trusted_in = None
    try:
        target = _home(home)
        trust(target, key.public_pem.encode(), key.private_path)
        trusted_in = str(target.root)
    except RegistryError:
        pass  # no home yet: `registry init` trusts the default key
    if json:
        print_json({"key": key, "trusted_in": trusted_in})
        return
    console.print(f"key {key.keyid}\nprivate key: {key.private_path}", highlight=False)
    console.print(f"trusted in {trusted_in}" if trusted_in else "not trusted by any home yet: "
                  "registry init", highlight=False)


@keys_app.command("list")
def keys_list(home: HomeOpt = None, json: Json = False) -> None:
    """List your signing keys and the keys this home's ledger trusts.

    Example: registry keys list --json
    """
    from registry.cli.output import console, print_json, table
    from registry.store.keys import local_keys, trusted

    mine = local_keys()
    try:
        trusted_ids = sorted(trusted(_home(home)))
    except RegistryError:
        trusted_ids = []
    if json:
        print_json({"local": mine, "trusted": trusted_ids})
        return
    # 16 hex digits name a key here as they name records; --json has the full ids
    rows = [[k.keyid[:16], "yes" if k.default else "", "yes" if k.keyid in trusted_ids else "",
             k.private_path] for k in mine]
    rows += [[k[:16], "", "yes", ""] for k in trusted_ids if k not in {m.keyid for m in mine}]
    console.print(table("keys", ["key id", "default", "trusted here", "private key"], rows))


@keys_app.command("export")
def keys_export(
    keyid: Annotated[str | None, typer.Argument(
        show_default=False, help="Key id or prefix (default: your default key).")] = None,
) -> None:
    """Print a public key (PEM), for others to trust.

    Example: registry keys export > me.pub
    """
    from registry.errors import NotFound
    from registry.store.keys import KEYS_HINT, local_keys

    keys = [k for k in local_keys() if (k.keyid.startswith(keyid) if keyid else k.default)]
    if len(keys) != 1:
        raise NotFound(f"no single local key matches {keyid or 'default'}", hint=KEYS_HINT)
    typer.echo(keys[0].public_pem, nl=False)


@keys_app.command("trust")
def keys_trust(
    pem: Annotated[Path, typer.Argument(show_default=False, help="Public key PEM file.")],
    home: HomeOpt = None,
) -> None:
    """Trust a public key: commit it to the ledger's keys/.

    Example: registry keys trust colleague.pub
    """
    from registry.cli.output import console
    from registry.errors import InvalidInput
    from registry.store.keys import trust

    try:
        data = pem.read_bytes()
    except OSError as e:
        raise InvalidInput(f"{pem}: cannot read ({e.strerror})") from None
    keyid, new = trust(_home(home), data, pem)
    console.print(f"{'trusted' if new else 'already trusted'} key {keyid}", highlight=False)


def verify(
    record: Annotated[str | None, typer.Argument(
        show_default=False, help="Record id or prefix.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Verify every record.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Re-hash artifacts, check the signature, the id and the ledger commit.

    Exit 0 verified, 1 a record is wrong (the part is named), 3 could not verify.

    Example: registry verify 3f2a9c --json
    """
    from registry.cli.output import console, print_json
    from registry.verify import verify_records

    if (record is None) == (not all_):
        raise UsageError("give a record id or --all (not both)", hint="registry verify --all")
    report = verify_records(_home(home), None if all_ else record)
    if json:
        print_json(report)
    else:
        for check in report.records:
            status = "ok" if check.verified else "FAILED"
            console.print(f"{status:6} {check.id[:16]}  {check.artifacts} artifacts  "
                          f"signer {(check.signer or '?')[:16]}", highlight=False)
            for p in check.problems:
                console.print(f"       {p.part}: {p.detail}", highlight=False)
        console.print(f"{sum(c.verified for c in report.records)}/{len(report.records)} verified",
                      highlight=False)
    raise typer.Exit(report.exit_code)


def list_records(
    where: Annotated[list[str] | None, typer.Option(
        "--where", show_default=False, help="FIELD=VALUE: an identity field or a column.")] = None,
    limit: Annotated[int, typer.Option(min=0, help="Most recent N records; 0 for all.")] = 50,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """List records, newest first, filtered by identity fields.

    Example: registry list --where precision.kv_cache=fp8_e4m3 --where lane=tiny-fp8-kv
    """
    from registry.cli.output import console, print_json, table
    from registry.store.query import find_records

    rows = find_records(_home(home), where or [], limit or None)
    if json:
        print_json(rows)
        return
    console.print(table(None, ["id", "sealed", "lane", "model", "weights", "kv cache", "tok/s"], [
        [r.id[:12], r.created_at[:16].replace("T", " "), r.lane, r.model, r.weights, r.kv_cache,
         _decode_text(r)] for r in rows]))


def _decode_text(r: RecordRow) -> str | None:
    """The decode median, flagged unless its measurement is valid."""
    if r.decode_tok_s is None:
        return None
    flag = "" if r.quality == "valid" else f" ({r.quality or 'not judged'})"
    return f"{r.decode_tok_s:.2f}{flag}"


def show(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Show a record: identity with evidence, results with formulas, sources.

    Example: registry show 3f2a9c --json
    """
    from registry.cli.output import print_json
    from registry.store.query import show_record

    shown = show_record(_home(home), record)
    if json:
        print_json(shown)
        return
    _render(shown)


def _render(shown: ShownRecord) -> None:
    from registry.cli.output import console, table
    from registry.measure.report import quality_lines, value_text

    p = shown.statement.predicate
    console.print(f"[bold]record {shown.id}[/]\nledger commit {shown.ledger_commit}  "
                  f"signer {shown.signer}  sealed {p.run.sealed_at}", highlight=False)
    if not shown.statement_matches_id:
        console.print("[red]the statement file does not hash to this id: registry verify[/]")
    console.print(table("identity", ["field", "declared", "resolved", "status", "evidence"], [
        [name, f.declared, f.resolved, f.status.value,
         f"{f.evidence[0].source}:{f.evidence[0].line}" if f.evidence else None]
        for name, f in sorted(p.identity.fields.items())]))
    console.print(table("results", ["suite", "metric", "value [95% CI]", "unit", "formula", "n"], [
        [s.suite, m.name, value_text(m, s.quality), m.unit, m.formula, m.count]
        for s in p.results for m in s.metrics.values()]))
    for line in quality_lines(p.results):
        console.print(line, highlight=False)
    console.print(table("sources", ["role", "commit", "dirty", "path"], [
        [s.role, s.commit, s.dirty, s.path] for s in p.sources]))
    if p.imported:
        console.print(f"imported from {p.imported.capsule}; missing from the capsule: "
                      f"{', '.join(p.imported.missing) or 'none'}", highlight=False)
    console.print(f"{len(shown.statement.subject)} artifacts", highlight=False)


def reindex(home: HomeOpt = None, json: Json = False) -> None:
    """Rebuild the index from the ledger alone.

    Example: REGISTRY_DATABASE_URL=postgresql+psycopg://db/registry registry reindex
    """
    from registry.cli.output import console, print_json
    from registry.store.reindex import reindex as rebuild

    report = rebuild(_home(home))
    if json:
        print_json(report)
        return
    console.print(f"indexed {report.indexed} records", highlight=False)
    for rid, why in report.skipped.items():
        console.print(f"skipped {rid[:16]}: {why}", highlight=False)
