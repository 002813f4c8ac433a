"""The ``orbit`` command. Errors print one line (or one line per problem) and exit non-zero;
a user's mistake never prints a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .cli_api import add_api_commands
from .cli_run import add_server_options, run_dev, run_server, run_worker
from .errors import DefinitionError, OrbitError
from .ir import Definition, compile_definition, load_definition
from .ir.loader import Locator
from .ir.semver import parse_semver


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``orbit`` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        code: int = args.run(args)
    except OrbitError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orbit", description="Orbit, a durable workflow runtime.")
    commands = parser.add_subparsers(title="commands")
    check = commands.add_parser("check", help="validate definitions without a server")
    check.add_argument("files", nargs="+", type=Path, help="YAML or JSON definition files")
    check.add_argument("--json", action="store_true", help="print the compiled IR of each file")
    check.set_defaults(run=_check)
    schema = commands.add_parser("schema", help="print the JSON Schema of the definition format")
    schema.set_defaults(run=_schema)
    server = commands.add_parser("server", help="run the server", description="run the server")
    add_server_options(server)
    server.set_defaults(run=run_server)
    dev = commands.add_parser(
        "dev", help="a server, the examples deployed and their worker, in one command"
    )
    dev.add_argument("--bind", default="127.0.0.1:7233")
    dev.add_argument("--examples", type=Path, default=Path("examples"))
    dev.set_defaults(run=run_dev)
    worker = commands.add_parser("worker", help="run a Python worker: orbit worker MODULE:WORKER")
    worker.add_argument("target", help="module:attribute naming an orbit_actors.Worker")
    worker.add_argument("--url", help="ws://host:port (default $ORBIT_WORKER_URL or $ORBIT_URL)")
    worker.set_defaults(run=run_worker)
    add_api_commands(commands)
    return parser


def _check(args: argparse.Namespace) -> int:
    loaded: dict[Path, tuple[Definition, Locator]] = {}
    failed = False
    for path in args.files:
        try:
            loaded[path] = load_definition(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
            failed = True
        except DefinitionError as exc:
            _print_problems(exc)
            failed = True
    hashes: dict[tuple[str, str], str] = {}
    for path in _children_first(loaded):
        definition, locator = loaded[path]
        try:
            compiled = compile_definition(
                definition, resolve_child=lambda n, v: hashes.get((n, v)), locator=locator
            )
        except DefinitionError as exc:
            _print_problems(exc)
            failed = True
            continue
        hashes[(compiled.name, compiled.version)] = compiled.definition_hash
        if args.json:
            print(json.dumps(compiled.ir.to_ir_dict(), indent=2, sort_keys=True))
        else:
            print(
                f"ok  {path}  {compiled.name}@{compiled.version}  {compiled.definition_hash[:12]}"
            )
    return 1 if failed else 0


def _children_first(loaded: dict[Path, tuple[Definition, Locator]]) -> list[Path]:
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


def _print_problems(exc: DefinitionError) -> None:
    for problem in exc.problems:
        print(str(problem), file=sys.stderr)


def _schema(args: argparse.Namespace) -> int:
    schema = Definition.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Orbit workflow definition"
    print(json.dumps(schema, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
