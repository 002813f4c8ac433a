"""Every example passes ``orbit check``, checked together (a child among them pinned by hash),
and each one runs to its end in the pure driver with fake workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbit_actors.cli import main
from orbit_actors.ir import compile_source

from .golden import scenarios

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert {p.stem for p in EXAMPLES} >= {
        "order_saga",
        "approval",
        "batch",
        "invoice",
        "month_end",
        "countdown",
        "webhook",
    }


def test_orbit_check_passes_every_example_together(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", *map(str, EXAMPLES)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok  ") == len(EXAMPLES)


def test_a_child_among_the_files_is_pinned_by_its_computed_hash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    examples = Path(EXAMPLES[0]).parent
    main(["check", "--json", str(examples / "month_end.yaml"), str(examples / "invoice.yaml")])
    child_hash = compile_source((examples / "invoice.yaml").read_text()).definition_hash
    assert f'"definition_hash": "{child_hash}"' in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_each_example_scenario_runs_to_its_end(name: str) -> None:
    driver = scenarios.SCENARIOS[name]()
    assert driver.state.finished
    driver.assert_consistent()


def test_the_webhook_example_calls_the_url_from_its_input() -> None:
    from orbit_actors.testing import Driver

    text = next(p for p in EXAMPLES if p.stem == "webhook").read_text()
    d = Driver(compile_source(text)).start({"url": "http://127.0.0.1:8080/hook", "event": {"a": 1}})
    invocation = d.invocation("post")
    assert invocation is not None and invocation.request["url"] == "http://127.0.0.1:8080/hook"  # type: ignore[union-attr]
    d.run_task("post", {"status": 200, "headers": {}, "body": {"ok": True}})
    assert d.state.output == {"status": 200, "echoed": {"ok": True}}
