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
from ..errors import DefinitionError
from ..ir import Definition, compile_definition, load_definition
from ..ir.loader import Locator
from ..ir.semver import parse_semver
from . import output
from .options import api_command, command
from .values import plain, read_file

FILES = click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))


@command(
    "check", "Validate definitions without a server",
    example="orbit check examples/order_saga.yaml\norbit check *.yaml --json",
    details="The files are checked together, so a child workflow among them is pinned by its "
            "computed hash; a child not among them is checked by name and version only.",
)  # fmt: skip
@FILES
@click.option("--json", "json", is_flag=True, help="Print the compiled IR of each valid file.")
def check(args: argparse.Namespace) -> int:
    """Check each file; print ``ok`` lines (or the IR) and every problem found."""
    loaded: dict[Path, tuple[Definition, Locator]] = {}
    failed = False
    for path in args.files:
        try:
            loaded[path] = load_definition(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            failed = True
        except DefinitionError as exc:
            print_problems(exc)
            failed = True
    hashes: dict[tuple[str, str], str] = {}
    for path in children_first(loaded):
        definition, locator = loaded[path]
        try:
            compiled = compile_definition(
                definition, resolve_child=lambda n, v: hashes.get((n, v)), locator=locator
            )
        except DefinitionError as exc:
            print_problems(exc)
            failed = True
            continue
        hashes[(compiled.name, compiled.version)] = compiled.definition_hash
        if args.json:
            print(json.dumps(compiled.ir.to_ir_dict(), indent=2, sort_keys=True))
        else:
            name = f"{compiled.name}@{compiled.version}"
            output.line(output.status_word("ok"), str(path), name, compiled.definition_hash[:12])
    return 1 if failed else 0


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


def print_problems(exc: DefinitionError) -> None:
    """Every problem of a definition on stderr, one per line."""
    for problem in exc.problems:
        print(str(problem), file=sys.stderr)


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
def deploy(client: Client, args: argparse.Namespace) -> int:
    """Register every file; ``--json`` prints the API's answers as one list."""
    answers = deploy_paths(client, list(args.files), quiet=args.json)
    if args.json:
        print(json.dumps([plain(answer) for answer in answers], indent=2))
    return 0


def deploy_paths(
    client: Client, paths: list[Path], *, quiet: bool = False
) -> list[DefinitionRegistered]:
    """Check every file, then register them children first; returns the API's answers. A
    file with problems prints them and deploys nothing (ApiError ``INVALID_IR``)."""
    loaded: list[tuple[Path, Definition, str]] = []
    for path in paths:
        text = read_file(path)
        try:
            definition, _ = load_definition(text, str(path))
        except DefinitionError as exc:
            print_problems(exc)
            invalid = f"{path} is not a valid definition; nothing deployed"
            raise ApiError("INVALID_IR", invalid) from None
        loaded.append((path, definition, text))
    names = {(d.workflow, d.version) for _, d, _ in loaded}
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
    return answers


def _children_left(definition: Definition, names: set[tuple[str, str]]) -> bool:
    return any((name, child.version) in names for name, child in definition.workflows.items())
