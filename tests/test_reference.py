"""The generated reference pages (docs/reference/) match the code, and every setting is described."""

from __future__ import annotations

import argparse
import re

import pytest
from pydantic import BaseModel

from mnemo import reference


@pytest.mark.parametrize("name", ["cli.md", "configuration.md"])
def test_committed_reference_page_is_current(name):
    path = reference.docs_dir() / name
    assert path.is_file(), f"{path} is missing: run `python -m mnemo.reference`"
    committed = path.read_text(encoding="utf-8").splitlines()
    generated = reference.pages()[name].splitlines()
    if committed != generated:
        line = next(
            (i for i, (a, b) in enumerate(zip(committed, generated)) if a != b),
            min(len(committed), len(generated)),
        )
        pytest.fail(
            f"{path} is stale from line {line + 1} on (committed: {committed[line : line + 1]}, "
            f"generated: {generated[line : line + 1]}): run `python -m mnemo.reference` and commit it",
            pytrace=False,
        )


def test_every_config_section_and_setting_is_described():
    missing = []
    for section, model in reference.config_sections():
        if not (model.__doc__ or "").strip():
            missing.append(f"[{section}] (the class {model.__name__} has no docstring)")
        for key, field in model.model_fields.items():
            if not (field.description or "").strip():
                missing.append(f"{section}.{key}")
            assert not (
                isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
            ), f"{section}.{key} is a nested table: teach mnemo.reference to walk it"
    assert not missing, "give these Field(description=...) or a docstring: " + ", ".join(missing)


def test_configuration_page_lists_every_setting_with_its_environment_variable():
    page = reference.config_markdown()
    for section, model in reference.config_sections():
        assert f"## [{section}]" in page
        for key in model.model_fields:
            assert f"### {section}.{key}\n" in page
            assert f"`MNEMO_{section.upper()}__{key.upper()}`" in page


def test_cli_page_has_every_command_and_argument():
    page = reference.cli_markdown()

    def walk(parser: argparse.ArgumentParser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    parsers = list(walk(reference.build_parser()))
    assert len(parsers) > 10
    for parser in parsers:
        assert re.search(rf"^#+ {re.escape(parser.prog)}$", page, re.MULTILINE), (
            f"no section for {parser.prog}"
        )
        for action in parser._actions:
            if (
                action.option_strings
                and action.help is not argparse.SUPPRESS
                and action.dest != "help"
            ):
                assert f"`{action.option_strings[-1]}" in page, (
                    f"{parser.prog} {action.option_strings[-1]}"
                )


def test_cli_page_links_point_to_its_own_headings():
    page = reference.cli_markdown()
    anchors = {reference._anchor(h) for h in re.findall(r"^#+ (.+)$", page, re.MULTILINE)}
    links = re.findall(r"\]\(#([^)]+)\)", page)
    assert links and set(links) <= anchors


def test_pages_do_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    narrow = reference.cli_markdown()
    monkeypatch.setenv("COLUMNS", "300")
    assert reference.cli_markdown() == narrow


def test_check_names_the_stale_page_and_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reference, "docs_dir", lambda: tmp_path)
    assert reference.main(["--check"]) == 1  # nothing written yet
    err = capsys.readouterr().err
    assert (
        "cli.md is stale" in err
        and "configuration.md is stale" in err
        and "python -m mnemo.reference" in err
    )
    assert not list(tmp_path.iterdir())
    assert reference.main([]) == 0
    assert reference.main(["--check"]) == 0
    (tmp_path / "cli.md").write_text("old\n", encoding="utf-8")
    assert reference.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "cli.md is stale" in err and "configuration.md" not in err


def test_help_text_is_escaped_but_code_spans_stay():
    assert reference._escape("WM_CLASS *x* <a> `a_b`") == "WM\\_CLASS \\*x\\* \\<a\\> `a_b`"
