"""Assemble the documentation site's sources: the hand-written pages of docs/ plus the
references generated from Orbit itself — the workflow language from ``orbit schema``, the HTTP
API from the OpenAPI document the server serves at /v1/openapi.json, and the CLI from the CLI's
own help. ``bash scripts/docs.sh`` runs this, then mkdocs.

Usage: python scripts/docsgen.py OUT_FOLDER
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from orbit_actors.cli import orbit
from orbit_actors.ir import Definition
from orbit_actors.server.openapi import openapi_document

ROOT = Path(__file__).resolve().parent.parent


def main(out: Path) -> None:
    """Copy docs/ to ``out`` and write the generated reference pages beside it."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(ROOT / "docs", out)
    reference = out / "reference"
    reference.mkdir(exist_ok=True)
    schema = _schema()
    (reference / "orbit.schema.json").write_text(json.dumps(schema, indent=2, sort_keys=True))
    (reference / "workflow-language.md").write_text(workflow_language(schema))
    (reference / "http-api.md").write_text(http_api(openapi_document()))
    (reference / "cli.md").write_text(cli_reference())


def _schema() -> dict[str, Any]:
    document = Definition.model_json_schema(by_alias=True)
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["title"] = "Orbit workflow definition"
    return document


# -- the workflow language -------------------------------------------------------------------
def workflow_language(schema: dict[str, Any]) -> str:
    """One section per model of the definition format, a row per field."""
    parts = [
        "# Workflow language reference\n",
        "Generated from `orbit schema` (the JSON Schema editors can use: "
        "[orbit.schema.json](orbit.schema.json)). The language itself — expressions, "
        "templates, compensation, limits — is told in the [tutorial](../tutorial.md).\n",
        _model_section("Definition", schema),
    ]
    for name, model in sorted(schema["$defs"].items()):
        parts.append(_model_section(name, model))
    return "\n".join(parts)


def _model_section(name: str, model: dict[str, Any]) -> str:
    required = set(model.get("required", []))
    rows = ["| field | type | required | default |", "| --- | --- | --- | --- |"]
    for field, spec in model.get("properties", {}).items():
        default = json.dumps(spec["default"]) if "default" in spec else ""
        rows.append(f"| `{field}` | {_type(spec)} | {'yes' if field in required else ''} | "
                    f"{_cell(default)} |")  # fmt: skip
    description = " ".join(model.get("description", "").split()).replace("``", "`")
    return f"## {name}\n\n{description}\n\n" + "\n".join(rows) + "\n"


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        target = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{target}](#{target.lower()})"
    if "anyOf" in spec:
        return " or ".join(_type(option) for option in spec["anyOf"])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type(spec.get('items', {}))}"
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"map of {_type(spec['additionalProperties'])}"
    if "enum" in spec:
        return " / ".join(f"`{value}`" for value in spec["enum"])
    return str(kind) if isinstance(kind, str) else " or ".join(kind)


def _cell(text: str) -> str:
    return f"`{text}`" if text else ""


# -- the HTTP API ----------------------------------------------------------------------------
def http_api(document: dict[str, Any]) -> str:
    """One section per endpoint: summary, parameters, body and answers."""
    parts = [
        "# HTTP API reference\n",
        "Generated from the OpenAPI document every server serves at `/v1/openapi.json` "
        "(the same document; a test checks it against a running server). Errors are "
        '`{"error": {"code", "message"}}`.\n',
    ]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            parts.append(_operation(method.upper(), path, operation))
    return "\n".join(parts)


def _operation(method: str, path: str, operation: dict[str, Any]) -> str:
    lines = [f"## `{method} {path}`\n"]
    summary = operation.get("summary") or operation.get("description") or ""
    if summary:
        lines.append(" ".join(summary.split()) + "\n")
    parameters = operation.get("parameters", [])
    if parameters:
        lines.append("| parameter | in | required |\n| --- | --- | --- |")
        for parameter in parameters:
            required = "yes" if parameter.get("required") else ""
            lines.append(f"| `{parameter['name']}` | {parameter['in']} | {required} |")
        lines.append("")
    body = operation.get("requestBody", {}).get("content", {})
    if body:
        lines.append(f"Body: {', '.join(f'`{kind}`' for kind in body)}\n")
    answers = operation.get("responses", {})
    lines.append("| status | answer |\n| --- | --- |")
    for status, answer in answers.items():
        schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
        model = str(schema.get("$ref", "")).rsplit("/", 1)[-1]
        words = " ".join(str(answer.get("description", "")).split())
        lines.append(f"| {status} | {words}{f' (`{model}`)' if model else ''} |")
    return "\n".join(lines) + "\n"


# -- the CLI ---------------------------------------------------------------------------------
def cli_reference() -> str:
    """Every command's own ``--help``, as the CLI prints it."""
    intro = "Generated from the `orbit` command's own help (`orbit COMMAND --help`).\n"
    parts = ["# CLI reference\n", intro]
    for path, command in _commands(orbit, ["orbit"]):
        with click.Context(command, info_name=" ".join(path), terminal_width=100) as ctx:
            help_text = command.get_help(ctx)
        parts.append(f"## `{' '.join(path)}`\n\n```text\n{help_text}\n```\n")
    return "\n".join(parts)


def _commands(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _commands(sub, [*path, name])
    return found


if __name__ == "__main__":
    main(Path(sys.argv[1]))
