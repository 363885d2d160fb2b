"""`registry remote add|list|remove`, `push`, `pull`: share a ledger and its objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.app import new_app
from registry.cli.options import HomeOpt, Json, find
from registry.errors import RegistryError
from registry.formats.display import commit, short_id

if TYPE_CHECKING:
    from registry.team.sync import SyncReport

remote_app = new_app("Remotes: where a team's ledger and objects are shared.")
RemoteArg = Annotated[str | None, typer.Argument(
    show_default=False, help="Remote name (default: origin, else the only one).")]


def register(app: typer.Typer) -> None:
    app.add_typer(remote_app, name="remote")
    app.command()(push)
    app.command()(pull)


@remote_app.command("add")
def remote_add(
    name: Annotated[str, typer.Argument(show_default=False, help="Remote name.")],
    url: Annotated[str, typer.Argument(show_default=False, help=(
        "ssh://[user@]host[:port]/path, file:///path or /path: a folder holding "
        "ledger.git and objects/."))],
    ssh_command: Annotated[str | None, typer.Option(
        "--ssh-command", show_default=False,
        help="ssh with options (-i KEY, -p PORT, -o OPT, -F FILE), as GIT_SSH_COMMAND.")] = None,
    create: Annotated[bool, typer.Option(
        "--create", help="Create the remote folder: a bare ledger.git and objects/.")] = False,
    home: HomeOpt = None,
) -> None:
    """Name a remote (kept in the home, never in the ledger).

    Example: registry remote add origin ssh://me@lab.example/srv/registry --create
    """
    from registry.cli.output import console
    from registry.team.remotes import add_remote
    from registry.team.sync import create_remote

    remote = add_remote(find(home), name, url, ssh_command)
    if create:
        create_remote(remote)
    console.print(f"remote {name}: {url}" + (" (created)" if create else ""), highlight=False)


@remote_app.command("list")
def remote_list(home: HomeOpt = None, json: Json = False) -> None:
    """List this home's remotes and the head last verified from each.

    Example: registry remote list --json
    """
    from registry.cli.output import console, print_json, table
    from registry.store.trust import load_state
    from registry.team.remotes import load_remotes

    target = find(home)
    remotes = load_remotes(target).remotes
    try:
        heads = load_state(target).remotes
    except RegistryError:  # a home without a root of trust has verified nothing
        heads = {}
    if json:
        print_json({name: {**r.model_dump(), "verified_head": heads.get(name)}
                    for name, r in remotes.items()})
        return
    console.print(table("remotes", ["name", "url", "verified head"], [
        [name, r.url, commit(heads.get(name)) or "-"] for name, r in remotes.items()]))


@remote_app.command("remove")
def remote_remove(
    name: Annotated[str, typer.Argument(show_default=False, help="Remote name.")],
    home: HomeOpt = None,
) -> None:
    """Forget a remote (nothing on the remote changes).

    Example: registry remote remove origin
    """
    from registry.team.remotes import remove_remote

    remove_remote(find(home), name)


def pull(remote: RemoteArg = None, home: HomeOpt = None, json: Json = False) -> None:
    """Fetch a remote's ledger and objects, verify all of it, then apply it: local
    records not yet pushed are replayed on top. A remote that does not verify is
    refused (exit 1) and nothing is applied.

    Exit 0 pulled (or nothing new), 1 refused, 3 could not reach or fetch.

    Example: registry pull origin
    """
    from registry.team.remotes import get_remote
    from registry.team.sync import pull as run_pull

    target = find(home)
    _print(run_pull(target, get_remote(target, remote)), json)


def push(remote: RemoteArg = None, home: HomeOpt = None, json: Json = False) -> None:
    """Send the objects the remote lacks, then the ledger (never forced). When others
    pushed first, their commits are pulled and verified, and the local ones replayed
    on top, before pushing.

    Exit 0 pushed, 1 the remote does not verify, 3 could not reach or send.

    Example: registry push
    """
    from registry.team.remotes import get_remote
    from registry.team.sync import push as run_push

    target = find(home)
    _print(run_push(target, get_remote(target, remote)), json)


def _print(report: SyncReport, json: bool) -> None:
    from registry.cli.output import console, print_json

    if json:
        print_json(report)
        return
    moved = report.before != report.after
    lines = [f"{report.remote}: ledger {commit(report.before) or 'empty'} -> "
             f"{commit(report.after) or 'empty'}" if moved else f"{report.remote}: ledger "
             f"up to date at {commit(report.after) or 'empty'}"]
    if report.pushed:  # what the remote got, a keyring version or a claim event too
        lines = [f"{report.remote}: pushed {len(report.pushed)} commit(s), remote ledger "
                 f"{commit(report.remote_before) or 'empty'} -> {commit(report.after)}",
                 *(f"  {subject}" for subject in report.pushed)]
    if report.received:
        lines.append(f"received {len(report.received)} record(s), {report.objects_in.objects} "
                     f"object(s), {report.objects_in.bytes:,} bytes; all verified")
    if report.replayed:
        lines.append(f"replayed {len(report.replayed)} local record(s) on the remote's head")
    if report.sent:
        lines.append(f"sent {len(report.sent)} record(s), {report.objects_out.objects} "
                     f"object(s), {report.objects_out.bytes:,} bytes")
    lines += report.keyring
    lines += [f"untrusted {short_id(rid)}: {why}" for rid, why in report.untrusted.items()]
    console.print("\n".join(lines), highlight=False)
