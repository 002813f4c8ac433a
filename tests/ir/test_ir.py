"""The IR: normalised, hashed canonically, idempotent, children pinned by hash."""

from __future__ import annotations

import json

import pytest

from orbit_actors.errors import ChildNotRegisteredError
from orbit_actors.ir import canonical_json, compile_ir, compile_source, definition_hash

PARENT = """
workflow: parent
version: 1.0.0
tasks: {t: {version: "1"}}
workflows: {kid: {version: 2.0.0}}
retry: {max_attempts: 5}
steps:
  - {id: a, task: t, timeout: 1m30s}
  - {id: b, workflow: kid, input: {x: "${steps.a.output}"}, after: []}
"""


def test_the_ir_is_normalised() -> None:
    ir = compile_source(PARENT).ir.to_ir_dict()
    a, b = ir["steps"]
    assert a["timeout"] == 90_000
    assert a["retry"] == {"max_attempts": 5, "initial_interval": 1000, "backoff": 2.0,
                          "max_interval": 60_000, "non_retryable": []}  # fmt: skip
    assert a["after"] == [] and b["after"] == ["a"]
    assert ir["output"] == {}


def test_the_hash_is_sha256_of_the_canonical_ir_without_the_hash() -> None:
    compiled = compile_source(PARENT)
    ir = compiled.ir.to_ir_dict()
    assert ir["definition_hash"] == compiled.definition_hash == definition_hash(ir)
    assert len(compiled.definition_hash) == 64


def test_compiling_the_ir_again_gives_the_same_ir_and_hash() -> None:
    first = compile_source(PARENT).ir.to_ir_dict()
    second = compile_ir(json.loads(json.dumps(first))).ir.to_ir_dict()
    assert canonical_json(first) == canonical_json(second)


def test_a_clients_hash_is_never_trusted() -> None:
    ir = compile_source(PARENT).ir.to_ir_dict()
    forged = {**ir, "definition_hash": "0" * 64}
    assert compile_ir(forged).definition_hash == ir["definition_hash"]


def test_formatting_does_not_change_the_hash() -> None:
    compact = compile_source(PARENT).definition_hash
    spaced = compile_source(
        PARENT.replace("{id: a, task: t, timeout: 1m30s}", "{timeout: 90000, task: t, id: a}")
    )
    assert spaced.definition_hash == compact


def test_a_child_is_pinned_by_the_hash_the_resolver_gives() -> None:
    compiled = compile_source(PARENT, resolve_child=lambda name, version: "h" * 64)
    assert compiled.ir.workflows["kid"].definition_hash == "h" * 64
    assert compiled.definition_hash != compile_source(PARENT).definition_hash


def test_a_required_child_that_is_not_registered_is_named() -> None:
    with pytest.raises(ChildNotRegisteredError) as caught:
        compile_source(PARENT, resolve_child=lambda n, v: None, require_children=True)
    assert caught.value.message.startswith(
        "parent@1.0.0 starts child workflow kid@2.0.0, which is not registered; register the child first"
    )
    assert caught.value.code == "CHILD_NOT_REGISTERED"


def test_null_templates_survive_normalisation() -> None:
    text = "workflow: x\nversion: 1.0.0\nsteps: [{id: a, value: null}]\n"
    ir = compile_source(text).ir.to_ir_dict()
    assert ir["steps"][0]["value"] is None
    assert compile_ir(ir).definition_hash == compile_source(text).definition_hash
