"""`registry publish RECORD --out DIR`: a signed package a stranger can re-run;
`registry publish --check DIR [--remote]`: its closure, checked as a stranger would."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find

if TYPE_CHECKING:
    from registry.publish.closure import Closure
    from registry.publish.profile import XMetric


def register(app: typer.Typer) -> None:
    app.command()(publish)


def publish(
    record: Annotated[str | None, typer.Argument(
        show_default=False, help="Record id or prefix (omit with --check).")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="A new or empty folder to write the package into.")] = None,
    promotion: Annotated[str | None, typer.Option(
        "--promotion", help="The promotion verification (id or prefix) it rests on.")] = None,
    profile: Annotated[list[str] | None, typer.Option(
        "--profile", help="A sweep: X_METRIC=ID,ID,... (context_tokens, concurrent_sequences "
                          "or speculative_tokens), one record per measured point.")] = None,
    contributors: Annotated[Path | None, typer.Option(
        "--contributors", help="TOML of [[contributor]] entries; each status is derived "
                               "from evidence.")] = None,
    credit: Annotated[list[str] | None, typer.Option(
        "--credit", help="A contributor whose standing signed credit fact of this ledger "
                         "the package carries (registry credit add).")] = None,
    check: Annotated[Path | None, typer.Option(
        "--check", help="Check the package in this folder instead of writing one; or a "
                        "lab publication-manifest.json or package.json, by the lab's "
                        "rules.")] = None,
    rerun: Annotated[Path | None, typer.Option(
        "--rerun", help="Run the package in this folder again from its own files (its "
                        "launch, into DIR/run; a run/ already there is taken as it is), "
                        "seal it here and judge it against the package's figures.")] = None,
    models: Annotated[Path | None, typer.Option(
        "--models", help="With --rerun: the folder ${REGISTRY_MODELS} names.")] = None,
    min_performance: Annotated[float, typer.Option(
        "--min-performance", help="With --rerun: the floor, new/packaged.")] = 0.95,
    catalog: Annotated[Path | None, typer.Option(
        "--catalog", help="With --check of a lab package.json: the lab's "
                          "repro/guide-catalog.json (its entry, its guide class).")] = None,
    remote: Annotated[bool, typer.Option(
        "--remote", help="With --check: fetch every asset and upstream again.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Publish a record as a package: its recipe and suites as sealed, the model at its
    revision, the engine at its commit with each patch, the figures with their quality,
    the promotion it rests on, five commands, signed; nothing of the host gets in.
    `--check DIR` checks a package's closure (exit 0 closed, 1 not), with its guide
    class and what the next class needs; `--remote` fetches every asset and upstream.

    `--check FILE` checks a lab `publication-manifest.json` or `package.json` the way
    the lab's validators do (exit 0 passed, 1 a rule broken); rules that need the lab's
    clone are listed as not checked.

    Example: registry publish 3f2a9c --promotion 9e1d --out pkg
    Example: registry publish --check pkg --remote
    `--rerun DIR` runs a package again from its own files in this home and judges the
    new run against the package's figures, one row each (exit 0 passed, 1 not).

    Example: registry publish --check publication-manifest.json
    Example: registry publish --rerun pkg --models ~/models
    """
    from registry.cli.exits import leave, with_code
    from registry.cli.output import print_json
    from registry.errors import ExitCode, InvalidInput

    if rerun is not None:
        if record is not None or out is not None or check is not None:
            raise InvalidInput("--rerun takes a package folder alone",
                               hint="registry publish --rerun DIR [--models M]")
        _rerun(rerun, models, min_performance, home, json)
        return
    if check is not None:
        if record is not None or out is not None:
            raise InvalidInput("--check takes a package folder alone",
                               hint="registry publish --check DIR [--remote]")
        from registry.publish.labcheck import is_lab_file

        if is_lab_file(check):
            _lab(check, catalog, remote, json)
            return
        if check.is_file():  # a registry package's package.json: its folder
            check = check.parent
        closure = _check(check, remote, home)
        code = ExitCode.OK if closure.passed else ExitCode.FAILED
        print_json(with_code(closure, code)) if json else _print_closure(closure)
        leave(code)
        return
    if record is None or out is None:
        raise InvalidInput("give a record and --out DIR, or --check DIR",
                           hint="registry publish --help")
    from registry.publish import publish_record

    package = publish_record(find(home), record, out, promotion=promotion,
                             profiles=[_sweep(p) for p in profile or []],
                             contributors=contributors, credits=credit or [])
    if json:
        print_json(package)
    else:
        typer.echo(f"package of {package.record[:16]} written to {out} "
                   f"({len(package.suites)} suites, {len(package.figures)} figures), "
                   f"signed by {package.signer}")


def _rerun(folder: Path, models: Path | None, floor: float, home: Path | None,
           json: bool) -> None:
    from registry.cli.exits import leave, with_code
    from registry.cli.output import console, print_json, table
    from registry.errors import ExitCode
    from registry.publish.rerun import rerun_package

    done = rerun_package(find(home), folder, models_dir=models, min_performance=floor)
    code = ExitCode.OK if done.passed else ExitCode.FAILED
    if json:
        print_json(with_code(done, code))
    else:
        console.print(table(f"re-run of {done.package[:16]} as {done.record[:16]}",
                            ["figure", "packaged", "re-run", "verdict", "why"],
                            [[r.name, r.packaged, r.new or "-", r.verdict, r.why]
                             for r in done.rows]))
        console.print(f"verdict: {done.verdict}", highlight=False,
                      style="green" if done.passed else "bold red")
    leave(code)


def _lab(path: Path, catalog: Path | None, remote: bool, json: bool) -> None:
    from registry.cli.exits import leave, with_code
    from registry.cli.output import console, print_json, table
    from registry.errors import ExitCode, InvalidInput
    from registry.publish.labcheck import check_lab_file

    if remote:
        raise InvalidInput("--remote checks registry packages; the lab's own remote audit "
                           "(download, readelf, objcopy) is not done here",
                           hint=f"registry publish --check {path}")
    done = check_lab_file(path, catalog=catalog)
    code = ExitCode.OK if done.passed else ExitCode.FAILED
    if json:
        print_json(with_code(done, code))
    else:
        if done.findings:
            console.print(table(f"{done.kind} {path}", ["rule", "the lab's message"],
                                [[f.rule, f.message] for f in done.findings]))
        for rule in done.not_checked:
            console.print(f"not checked (needs the lab's clone): {rule}", highlight=False)
        if done.guide_class or done.missing:
            console.print(f"guide class: {done.guide_class or 'none'}"
                          + (f" (starter needs: {'; '.join(done.missing)})"
                             if done.missing else ""), highlight=False)
        console.print(f"{done.format} {done.status}: "
                      + ("passed" if done.passed else f"{len(done.findings)} rules broken"),
                      highlight=False, style="green" if done.passed else "bold red")
    leave(code)


def _sweep(text: str) -> tuple[XMetric, list[str]]:
    from registry.errors import InvalidInput
    from registry.publish.profile import XMetric

    name, _, ids = text.partition("=")
    try:
        return XMetric(name), [i for i in ids.split(",") if i]
    except ValueError:
        raise InvalidInput(f"--profile {text!r}: {name!r} is not an x metric",
                           hint="context_tokens, concurrent_sequences or speculative_tokens"
                           ) from None


def _check(folder: Path, remote: bool, home: Path | None) -> Closure:
    """The closure, the signature checked against the signers of this home's keyring
    when there is a home (a stranger pins the publisher's key there first)."""
    from registry.errors import RegistryError
    from registry.publish.closure import check_package
    from registry.signing.keyring import Role
    from registry.store.trust import current_keyring

    try:
        trusted = current_keyring(find(home)).current.with_role(Role.signer)
    except RegistryError:
        trusted = None
    return check_package(folder, remote=remote, trusted=trusted)


def _print_closure(closure: Closure) -> None:
    from registry.cli.output import console, table

    if closure.findings:
        console.print(table(f"closure of {closure.path}", ["code", "detail"],
                            [[f.code, f.detail] for f in closure.findings]))
    console.print(f"guide class: {closure.guide_class}"
                  + (f" (next needs: {'; '.join(closure.missing)})" if closure.missing
                     else ""), highlight=False)
    if closure.remote_verified_at:
        console.print(f"remote verified at {closure.remote_verified_at}", highlight=False)
    console.print("closed" if closure.passed else "not closed", highlight=False,
                  style="green" if closure.passed else "bold red")
