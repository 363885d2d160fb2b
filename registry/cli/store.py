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

    from registry.signing.signed import Trust
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
    pin: Annotated[list[str] | None, typer.Option(
        "--pin", show_default=False,
        help="Join a team: pin this root key id (full 64 digits) and start no keyring of "
             "your own; then `registry remote add` and `registry pull`.")] = None,
) -> None:
    """Create a registry home: objects/, ledger/ (git) and the index. With a signing key,
    the ledger's first keyring makes it the root, and the home pins it; with --pin, the
    home trusts the team's root instead and its ledger comes from a pull.

    Example: registry init
    Example: registry init --pin 3f2a9c41...e0
    """
    import os

    from registry.cli.output import console
    from registry.store.create import init_home
    from registry.store.home import DIRNAME, ENV_HOME

    if home and directory:
        raise UsageError("give the project folder or --home, not both")
    if directory is not None:  # named here: it wins over $REGISTRY_HOME
        root = directory / DIRNAME
    else:
        root = home or Path(os.environ.get(ENV_HOME) or Path.cwd() / DIRNAME)
    created = init_home(root)
    console.print(f"registry home: {created.root}", highlight=False)
    if pin:
        _pin(created, pin, 1)
        console.print(f"pinned root key(s) {', '.join(k[:16] for k in pin)}: registry remote "
                      "add NAME URL, then registry pull", highlight=False)
        return
    console.print(_start_keyring(created), highlight=False)


def _pin(home: Home, keyids: list[str], threshold: int) -> None:
    from registry.errors import InvalidInput
    from registry.store.trust import pin_roots

    bad = [k for k in keyids if len(k) != 64 or any(c not in "0123456789abcdef" for c in k)]
    if bad:
        raise InvalidInput(f"{bad[0]!r}: a root is pinned by its full 64-digit key id")
    pin_roots(home, keyids, threshold)


def _start_keyring(home: Home) -> str:
    """Make the default key the root of an empty ledger; say where trust stands."""
    from registry.signing.keys import signing_key
    from registry.store.ledger import Ledger
    from registry.store.trust import current_keyring, genesis

    try:
        signer = signing_key()
    except RegistryError:
        return "no signing key yet: registry keys init"
    if Ledger(home.ledger).head() is None:
        genesis(home, signer)
        return f"keyring v1: root and signer {signer[0][:16]} (pinned by this home)"
    try:
        ring = current_keyring(home).current
    except RegistryError as e:
        return f"ledger keyring not trusted here: {e.message}"
    role = ring.entry(signer[0])
    if role is None:
        return (f"key {signer[0][:16]} is not in this ledger's keyring: a root holder runs "
                "`registry keys trust KEY.pub`")
    return f"key {signer[0][:16]} is {' and '.join(role.roles)} in keyring v{ring.version}"


@keys_app.command("init")
def keys_init(home: HomeOpt = None, json: Json = False) -> None:
    """Create an Ed25519 signing key (private key 0600, outside the ledger); in a home
    with an empty ledger it becomes the keyring's root.

    Example: registry keys init
    """
    from registry.cli.output import console, print_json
    from registry.signing.keys import create_key

    key = create_key()
    try:
        status = _start_keyring(_home(home))
    except RegistryError:
        status = "no registry home here yet: registry init"
    if json:
        print_json({"key": key, "status": status})
        return
    console.print(f"key {key.keyid}\nprivate key: {key.private_path}\n{status}",
                  highlight=False)


@keys_app.command("list")
def keys_list(home: HomeOpt = None, json: Json = False) -> None:
    """List your signing keys and this home's verified keyring.

    Example: registry keys list --json
    """
    from registry.cli.output import console, print_json, table
    from registry.signing.keys import local_keys
    from registry.store.trust import current_keyring

    mine = local_keys()
    try:
        ring = current_keyring(_home(home)).current
    except RegistryError:
        ring = None
    if json:
        print_json({"local": mine, "keyring": ring and ring.model_dump(mode="json", by_alias=True),
                    "version": ring and ring.version})
        return
    ids = {k.keyid for k in mine}
    # 16 hex digits name a key here as they name records; --json has the full ids
    rows = [[k.keyid[:16], ", ".join(k.roles) or "-", "active",
             "yes (default)" if any(m.default and m.keyid == k.keyid for m in mine)
             else "yes" if k.keyid in ids else ""] for k in (ring.keys if ring else [])]
    rows += [[d.keyid[:16], "-", f"{state} v{d.version}", "yes" if d.keyid in ids else ""]
             for state, gone in (("retired", ring.retired if ring else []),
                                 ("revoked", ring.revoked if ring else [])) for d in gone]
    known = {r[0] for r in rows}
    rows += [[k.keyid[:16], "-", "not in keyring", "yes (default)" if k.default else "yes"]
             for k in mine if k.keyid[:16] not in known]
    title = f"keyring v{ring.version}" if ring else "keys (no verified keyring)"
    console.print(table(title, ["key id", "roles", "state", "local"], rows))


@keys_app.command("export")
def keys_export(
    keyid: Annotated[str | None, typer.Argument(
        show_default=False, help="Key id or prefix (default: your default key).")] = None,
) -> None:
    """Print a public key (PEM), for others to trust.

    Example: registry keys export > me.pub
    """
    from registry.errors import NotFound
    from registry.signing.keys import KEYS_HINT, local_keys

    keys = [k for k in local_keys() if (k.keyid.startswith(keyid) if keyid else k.default)]
    if len(keys) != 1:
        raise NotFound(f"no single local key matches {keyid or 'default'}", hint=KEYS_HINT)
    typer.echo(keys[0].public_pem, nl=False)


@keys_app.command("trust")
def keys_trust(
    pem: Annotated[Path, typer.Argument(show_default=False, help="Public key PEM file.")],
    root: Annotated[bool, typer.Option("--root", help="Also a root: may sign keyring "
                                                      "versions.")] = False,
    home: HomeOpt = None,
) -> None:
    """Trust a public key as a signer: a new keyring version, signed by your root key.

    Example: registry keys trust colleague.pub
    """
    from registry.cli.output import console
    from registry.errors import InvalidInput
    from registry.signing.keyring import Role
    from registry.store.trust import add_key

    try:
        data = pem.read_bytes()
    except OSError as e:
        raise InvalidInput(f"{pem}: cannot read ({e.strerror})") from None
    roles = [Role.signer, Role.root] if root else [Role.signer]
    keyid, new = add_key(_home(home), data, pem, roles)
    console.print(f"{'trusted' if new else 'already trusted'} key {keyid}", highlight=False)


ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (kept in the keyring).")]
KeyArg = Annotated[str, typer.Argument(show_default=False, help="Key id or prefix.")]


@keys_app.command("retire")
def keys_retire(keyid: KeyArg, reason: ReasonOpt, home: HomeOpt = None) -> None:
    """Retire a key: it signs nothing new; records it signed while trusted stay valid.

    Example: registry keys retire 3f2a9c41 --reason "left the team"
    """
    from registry.cli.output import console
    from registry.store.trust import remove_key

    gone = remove_key(_home(home), keyid, reason, revoke=False)
    console.print(f"retired key {gone}", highlight=False)


@keys_app.command("revoke")
def keys_revoke(keyid: KeyArg, reason: ReasonOpt, home: HomeOpt = None) -> None:
    """Revoke a compromised key: nothing it ever signed is trusted any more.

    Example: registry keys revoke 3f2a9c41 --reason "laptop stolen"
    """
    from registry.cli.output import console
    from registry.store.trust import remove_key

    gone = remove_key(_home(home), keyid, reason, revoke=True)
    console.print(f"revoked key {gone}: its records are untrusted from now on", highlight=False)


@keys_app.command("rotate")
def keys_rotate(home: HomeOpt = None) -> None:
    """Make a new default key with your key's roles and retire the old one.

    Example: registry keys rotate
    """
    from registry.cli.output import console
    from registry.store.trust import rotate_key

    new = rotate_key(_home(home))
    console.print(f"new default key {new}; the old key is retired", highlight=False)


@keys_app.command("pin")
def keys_pin(
    keyids: Annotated[list[str], typer.Argument(show_default=False,
                                                help="Full key ids of the ledger's roots.")],
    threshold: Annotated[int, typer.Option(min=1, help="Root signatures needed.")] = 1,
    home: HomeOpt = None,
) -> None:
    """Pin the root keys this home trusts for a ledger it did not start (a clone).

    Example: registry keys pin 3f2a9c41...e0 --home team/.registry
    """
    from registry.cli.output import console
    from registry.store.trust import current_keyring

    target = _home(home)
    _pin(target, keyids, threshold)
    ring = current_keyring(target).current
    console.print(f"pinned {len(keyids)} root key(s); keyring v{ring.version} verifies",
                  highlight=False)


def verify(
    record: Annotated[str | None, typer.Argument(
        show_default=False, help="Record id or prefix.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Verify every record.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Check the keyring and the whole signed history, then each record: id, signature
    by a trusted key, artifacts, ledger files and index row.

    Exit 0 verified, 1 something is wrong (the part is named), 3 could not verify.

    Example: registry verify 3f2a9c --json
    """
    from registry.cli.output import console, print_json
    from registry.store.verify import verify_records

    if (record is None) == (not all_):
        raise UsageError("give a record id or --all (not both)", hint="registry verify --all")
    report = verify_records(_home(home), None if all_ else record)
    if json:
        print_json(report)
    else:
        for problem in report.ledger:
            console.print(f"FAILED {problem.part}: {problem.detail}", style="red",
                          highlight=False)
        for check in report.records:
            signer = f"signer {check.signer[:16]}" if check.signer else "no trusted signer"
            console.print(f"{'ok    ' if check.verified else 'FAILED'} {check.id[:16]}  "
                          f"{check.artifacts} artifacts  {signer}", highlight=False,
                          style=None if check.verified else "red")
            for p in check.problems:
                console.print(f"       {p.part}: {p.detail}", highlight=False)
        for p in report.attestation_problems:
            console.print(f"FAILED {p.part}: {p.detail}", style="red", highlight=False)
        history = "history ok" if not report.ledger else "history FAILED"
        console.print(f"{sum(c.verified for c in report.records)}/{len(report.records)} records "
                      f"verified; {report.verifications} verifications; keyring "
                      f"v{report.keyring_version or '?'}; {history}",
                      highlight=False, style=None if report.exit_code == 0 else "red")
    raise typer.Exit(report.exit_code)


def list_records(
    where: Annotated[list[str] | None, typer.Option(
        "--where", show_default=False,
        help="FIELD OP VALUE, OP one of = != < <= > >= (typed: numbers as numbers).")] = None,
    limit: Annotated[int, typer.Option(min=0, help="Most recent N records; 0 for all.")] = 50,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """List records, newest first, filtered by identity fields, columns or metrics.

    Example: registry list --where precision.kv_cache=fp8_e4m3 --where 'parallel.tensor>1'
    """
    from registry.cli.output import console, print_fitted, print_json
    from registry.compare.table import filter_ids, split_where
    from registry.formats.record import UNPROVEN
    from registry.store.query import find_records

    target = _home(home)
    equal, typed = split_where(where or [])
    rows = find_records(target, equal, None if typed else limit or None)
    if typed:
        kept = set(filter_ids(target, [r.id for r in rows], typed))
        rows = [r for r in rows if r.id in kept][:limit or None]
    if json:
        print_json(rows)
        return
    unproven = [r.summary.startswith(UNPROVEN) for r in rows]  # summary_line marks them
    # the model is in `show` and `compare --columns model.architecture`: 80 columns fit
    print_fitted(["id", "sealed", "lane", "weights", "kv cache", "tok/s"], [
        [_marked_id(r.id, r.trust, bad), r.created_at[:16].replace("T", " "), r.lane or "",
         r.weights or "", r.kv_cache or "", _decode_text(r) or ""]
        for r, bad in zip(rows, unproven, strict=True)],
        keep=[True, True, False, False, False, True])
    console.print(f"{len(rows)} records", highlight=False, soft_wrap=True)
    if any(unproven):
        console.print("! UNPROVEN: its evidence proves nothing (registry show ID says why)",
                      style="bold red", highlight=False)
    for r in rows:
        if r.trust != "verified" or r.trust_detail:
            console.print(f"{r.id[:16]} {(r.trust or 'unchecked').upper()}: "
                          f"{r.trust_detail or ''}", style="red", highlight=False)


def _marked_id(rid: str, trust: Trust | None, unproven: bool) -> str:
    """An id as a table cell; a record no trusted key signed, or an unproven one, is
    marked (the lines below the table say why)."""
    if trust != "verified":
        return f"{rid[:16]} {str(trust or '?').upper()}"
    return f"{rid[:16]}!" if unproven else rid[:16]


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

    found = show_record(_home(home), record)
    if json:
        print_json(found)
        return
    _render(found)


def _render(record: ShownRecord) -> None:
    """A summary a person reads in one screen, then the details, each row on one line."""
    from collections import Counter

    from registry.cli.output import console, print_fitted, safe, shown
    from registry.formats.record import summary_line
    from registry.formats.unproven import mark
    from registry.measure.display import quality_lines, value_text

    p = record.statement.predicate
    check = record.check
    if not check.ok:
        console.print(f"{check.trust.value.upper()}: {check.detail or ''}; nothing below is "
                      f"vouched for (registry verify {record.id[:16]})", style="bold red",
                      highlight=False)
    decode = next((s.metrics["decode_tok_s.median"] for s in p.results
                   if "decode_tok_s.median" in s.metrics), None)
    statuses = Counter(f.status.value for f in p.identity.fields.values())
    flagged = sorted(n for n, f in p.identity.fields.items()
                     if f.status.value in ("mismatch", "unresolved"))
    facts = [("record", record.id), ("what", summary_line(p)),
             ("sealed", f"{p.run.sealed_at}  by "
                        f"{check.signer[:16] if check.signer else 'no trusted signer'}  "
                        f"ledger commit {(record.ledger_commit or '?')[:12]}"),
             ("recipe", (p.recipe or {}).get("name")), ("parent", p.parent),
             ("imported", p.imported and f"from {p.imported.capsule}; "
                                         f"{len(p.imported.missing)} manifest entries absent"),
             ("decode", decode and f"{decode.value:.2f} tok/s ({decode.formula}, "
                                   f"{decode.count} rows)"),
             ("identity", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))),
             ("check", ", ".join(flagged)),
             ("overrides", ", ".join(f"{o.field} ({o.reason})" for o in p.overrides))]
    for name, value in facts:
        if value:
            console.print(f"[bold]{name:9}[/] {safe(value)}", highlight=False, soft_wrap=False,
                          markup=True)
    unproven = mark(p.unproven, p.identity)
    if unproven:
        console.print(unproven, style="bold red", highlight=False)
    console.print(f"{len(record.statement.subject)} artifacts; details follow "
                  "(--json for everything)\n", highlight=False)
    print_fitted(["field", "value", "status", "evidence"], [
        [name, _value(f.declared, f.resolved), f.status.value,
         f"{f.evidence[0].source}:{f.evidence[0].line}" if f.evidence else ""]
        for name, f in sorted(p.identity.fields.items())],
        keep=[True, False, True, True], title="identity (value: resolved, else declared)")
    console.print()
    print_fitted(["suite", "metric", "value [95% CI]", "unit", "n"], [
        [s.suite, m.name, value_text(m, s.quality), m.unit, str(m.count)]
        for s in p.results for m in s.metrics.values()],
        keep=[False, True, True, True, True], title="results")
    for line in quality_lines(p.results):
        console.print(line, highlight=False)
    formulas = {m.name: m.formula for s in p.results for m in s.metrics.values()}
    for name, formula in formulas.items():  # below the table: a formula is never cut
        console.print(f"  {name} = {formula}", highlight=False, soft_wrap=False)
    console.print()
    print_fitted(["role", "commit", "dirty", "path"], [
        [s.role, (s.commit or "")[:12], shown(s.dirty), s.path] for s in p.sources],
        keep=[True, True, True, False], title="sources")
    if p.imported:
        from registry.cli.importing import print_imported

        print_imported(p)
    _print_verifications(record)


def _print_verifications(record: ShownRecord) -> None:
    """Every trusted verification that judged the record, one line each."""
    from registry.cli.output import console, print_fitted

    if not record.verifications:
        console.print("verifications: none", highlight=False)
        return
    console.print()
    print_fitted(["verification", "time", "policy", "result", "signer", "as"], [
        [v.id[:16], v.statement.predicate.time_verified, v.statement.predicate.policy.name,
         v.statement.predicate.result.value, v.signer[:16],
         next((role for role, rid in v.statement.predicate.records.items()
               if rid == record.id), "")]
        for v in record.verifications],
        keep=[True, True, True, True, False, True], title="verifications")


def _value(declared: object, resolved: object) -> str:
    from registry.cli.output import shown

    if resolved is None:
        return f"declared {shown(declared)}" if declared is not None else ""
    if declared is not None and declared != resolved:
        return f"{shown(resolved)} (declared {shown(declared)})"
    return shown(resolved)


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
