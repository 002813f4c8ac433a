"""``orbit check`` prints every problem of a file at once, each with its position, the source
line and a caret under what is wrong, and a suggestion for a misspelt name. The messages are
golden files: ``tests/cli/golden/problems/<name>.txt`` is what ``orbit check <name>.yaml``
prints (regenerate one by running that command with NO_COLOR=1 in that folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbit_actors.cli import main

PROBLEMS = Path(__file__).parent / "golden" / "problems"
CASES = sorted(p.stem for p in PROBLEMS.glob("*.yaml"))


@pytest.mark.parametrize("name", CASES)
def test_check_prints_the_golden_problems(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(PROBLEMS)
    assert main(["check", f"{name}.yaml"]) == 1
    shown = capsys.readouterr()
    assert shown.out == ""
    assert shown.err == (PROBLEMS / f"{name}.txt").read_text()


def test_no_types_leaves_out_only_the_schema_checks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(PROBLEMS)
    assert main(["check", "--no-types", "types.yaml"]) == 0
    assert main(["check", "--no-types", "misspelt.yaml"]) == 1
    err = capsys.readouterr().err
    assert "retyr: unknown field" in err and "nmae" not in err


def test_an_unknown_field_does_not_hide_the_other_problems(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(PROBLEMS)
    main(["check", "misspelt.yaml"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("misspelt")]
    assert [line.split(": ", 1)[0] for line in lines] == [
        "misspelt.yaml:9:5",
        "misspelt.yaml:10:13",
    ]


def test_every_example_passes_with_the_type_checks(capsys: pytest.CaptureFixture[str]) -> None:
    examples = sorted(str(p) for p in (Path(__file__).parents[2] / "examples").glob("*.yaml"))
    assert main(["check", *examples]) == 0, capsys.readouterr().err
