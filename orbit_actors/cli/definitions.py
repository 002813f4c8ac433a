"""``orbit check``, ``orbit schema`` and ``orbit deploy``: definitions, with or without a
server. A file with problems prints every one of them with its position."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import click

from ..api.models import DefinitionRegistered
from ..client import ApiError, Client
from ..ir import Definition
from ..ir.check import Checked, compile_checked, load_checked
from ..ir.loader import Locator
from ..ir.semver import parse_semver
from . import output
from .options import api_command, command
from .problems import show_problems
from .upgrade import check_paths
from .values import plain, read_file

FILES = click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))


@command(
    "check", "Validate definitions without a server",
    example="orbit check examples/order_saga.yaml\norbit check *.yaml --json\n"
            "orbit check flow.yaml --no-types",
    details="Every problem of every file is printed at once, each with its line and column "
            "and a caret under the source, with a suggestion for a misspelt name. Besides the "
            "language's rules, expressions are checked against the declared input, signal and "
            "task output schemas (a field that is not declared, a string compared with a "
            "number); --no-types leaves those checks out. The files are checked together, so "
            "a child workflow among them is pinned by its computed hash; a child not among "
            "them is checked by name and version only.",
)  # fmt: skip
@FILES
@click.option("--json", "json", is_flag=True, help="Print the compiled IR of each valid file.")
@click.option("--no-types", is_flag=True,
              help="Skip checking expressions against the declared schemas.")  # fmt: skip
def check(args: argparse.Namespace) -> int:
    """Check each file; print ``ok`` lines (or the IR) and every problem found."""
    texts: dict[Path, str] = {}
    loaded: dict[Path, Checked] = {}
    failed = False
    for path in args.files:
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            failed = True
            continue
        loaded[path] = load_checked(texts[path], str(path))
    hashes: dict[tuple[str, str], str] = {}
    for path in _check_order(loaded):
        checked = compile_checked(
            loaded[path], lambda n, v: hashes.get((n, v)), types=not args.no_types
        )
        if checked.compiled is None:
            show_problems(checked.problems, texts[path])
            failed = True
            continue
        compiled = checked.compiled
        hashes[(compiled.name, compiled.version)] = compiled.definition_hash
        if args.json:
            print(json.dumps(compiled.ir.to_ir_dict(), indent=2, sort_keys=True))
        else:
            name = f"{compiled.name}@{compiled.version}"
            output.line(output.status_word("ok"), str(path), name, compiled.definition_hash[:12])
    return 1 if failed else 0


def _check_order(loaded: dict[Path, Checked]) -> list[Path]:
    """Children first among the files that loaded; then the files that did not."""
    definitions = {
        path: (c.definition, c.locator)
        for path, c in loaded.items()
        if c.definition is not None and c.locator is not None
    }
    ordered = children_first(definitions)
    return ordered + [path for path in loaded if path not in definitions]


def children_first(loaded: dict[Path, tuple[Definition, Locator]]) -> list[Path]:
    """Order files so that a child among them is compiled before its parents."""
    by_name = {(d.workflow, d.version): path for path, (d, _) in loaded.items()}
    ordered: list[Path] = []
    visiting: set[Path] = set()

    def visit(path: Path) -> None:
        if path in ordered or path in visiting:
            return
        visiting.add(path)
        for name, child in loaded[path][0].workflows.items():
            found = by_name.get((name, child.version))
            if found is not None:
                visit(found)
        ordered.append(path)

    for path in sorted(loaded, key=lambda p: parse_semver(loaded[p][0].version).precedence):
        visit(path)
    return ordered


@command("schema", "Print the JSON Schema of the definition format",
         example="orbit schema > orbit.schema.json")  # fmt: skip
def schema(args: argparse.Namespace) -> int:
    """The definition format as JSON Schema (draft 2020-12), for editors."""
    document = Definition.model_json_schema(by_alias=True)
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["title"] = "Orbit workflow definition"
    print(json.dumps(document, indent=2, sort_keys=True))
    return 0


@api_command(
    "deploy", "Validate and register definitions, children first",
    example="orbit deploy examples/*.yaml\norbit deploy order.yaml --url http://orbit:7233",
    details="Prints, per file, whether the definition was created or was already registered "
            "unchanged. A file with problems prints them and nothing is deployed.",
)  # fmt: skip
@FILES
@click.option(
    "--check", "check", is_flag=True,
    help="First check each file against the running executions of its workflow's latest "
         "version; exit 1 without deploying if any would diverge. Example: --check",
)  # fmt: skip
def deploy(client: Client, args: argparse.Namespace) -> int:
    """Register every file (after the upgrade check with ``--check``); ``--json`` prints the
    API's answers as one list."""
    if args.check and not check_paths(client, list(args.files), quiet=args.json):
        output.error("incompatible with running executions; nothing deployed")
        return 1
    answers = deploy_paths(client, list(args.files), quiet=args.json, warn=True)
    if args.json:
        print(json.dumps([plain(answer) for answer in answers], indent=2))
    return 0


def deploy_paths(
    client: Client, paths: list[Path], *, quiet: bool = False, warn: bool = False
) -> list[DefinitionRegistered]:
    """Check every file as the server will (every problem printed with a caret), then register
    them children first; returns the API's answers. A file with problems prints them and
    deploys nothing (ApiError ``INVALID_IR``). With ``warn``, each task no worker has ever
    announced is named on stderr."""
    loaded: list[tuple[Path, Definition, str]] = []
    invalid: list[str] = []
    for path in paths:
        text = read_file(path)
        checked = compile_checked(load_checked(text, str(path)), types=False)
        if checked.compiled is None or checked.definition is None:
            show_problems(checked.problems, text)
            invalid.append(str(path))
            continue
        loaded.append((path, checked.definition, text))
    if invalid:
        which = " and ".join(invalid) if len(invalid) < 3 else f"{len(invalid)} files"
        verb = "is not a valid definition" if len(invalid) == 1 else "are not valid definitions"
        raise ApiError("INVALID_IR", f"{which} {verb}; nothing deployed")
    names = {(d.workflow, d.version) for _, d, _ in loaded}
    definitions = [d for _, d, _ in loaded]
    answers: list[DefinitionRegistered] = []
    while loaded:  # children first: a file whose children among the files are all deployed
        ready = [item for item in loaded if not _children_left(item[1], names)]
        path, definition, text = (ready or loaded)[0]
        loaded.remove((path, definition, text))
        names.discard((definition.workflow, definition.version))
        answer = client.deploy(text)
        answers.append(answer)
        if not quiet:
            what = "created" if answer.created else "unchanged"
            name = f"{answer.name}@{answer.version}"
            what_word = output.status_word(what, 9)
            output.line(what_word, name.ljust(28), answer.definition_hash[:12], str(path))
    if warn:
        _warn_unannounced(client, definitions)
    return answers


def _warn_unannounced(client: Client, definitions: list[Definition]) -> None:
    """A warning on stderr for each task of ``definitions`` no worker has ever announced: its
    units would wait (reason ``no_worker``) until one does."""
    announced = {
        (c.get("task_name"), c.get("contract_version"))
        for worker in client.workers()
        for c in worker.contracts
    }
    warned: set[tuple[str, str]] = set()
    for definition in definitions:
        for task, contract in definition.tasks.items():
            if (task, contract.version) in announced | warned:
                continue
            warned.add((task, contract.version))
            output.note(
                f"warning: no worker has ever announced {task}@{contract.version} (used by "
                f"{definition.workflow}@{definition.version}); its units will wait for one"
            )


def _children_left(definition: Definition, names: set[tuple[str, str]]) -> bool:
    return any((name, child.version) in names for name, child in definition.workflows.items())
