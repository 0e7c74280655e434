"""The CLI reference, generated from ``profwin.cli.build_parser()`` so it cannot drift from the code.

Two uses:

- as a MkDocs hook (``hooks:`` in mkdocs.yml): the marker line in ``docs/cli.md`` is replaced by
  the reference on every docs build, so the site always matches the installed CLI;
- as a script: ``python scripts/gen_cli_docs.py`` prints the reference as Markdown.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

MARKER = "<!-- cli-reference: generated from profwin.cli.build_parser() at build time -->"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        takes_value = action.nargs != 0
        return f"`{name} {action.metavar or action.dest.upper()}`" if takes_value else f"`{name}`"
    return f"`{action.metavar or action.dest}`"


def _default(action: argparse.Action) -> str:
    if action.required or not action.option_strings:
        return "required"
    if action.default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0:
        return ""
    return f"`{action.default}`"


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    # The help flag is on every command, and subcommands get their own table.
    actions = [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    if not actions:
        return ["Takes no arguments.", ""]
    rows = ["| argument | default | what it does |", "| --- | --- | --- |"]
    for action in actions:
        help_text = (action.help or "") % {"default": action.default} if action.help else ""
        if action.choices:
            help_text += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| {_argument(action)} | {_default(action)} | {_cell(help_text)} |")
    return [*rows, ""]


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _usage(parser: argparse.ArgumentParser) -> str:
    # A fixed width keeps the text the same on every terminal.
    formatter = argparse.HelpFormatter(parser.prog, width=100)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _workspace_commands() -> tuple[dict[str, Any], dict[str, str]]:
    """Every command this repository's distributions add to ``profwin`` (the ``profwin.commands``
    entry points of each ``packages/*/pyproject.toml``), installed here or not, and the distribution
    of each: the reference describes the product. One not installed (profwin-ray stays out of the
    dev environment) is loaded from its package's source folder: a command's module is cheap."""
    from profwin.discovery import commands

    found: dict[str, Any] = dict(commands())
    homes: dict[str, str] = {}
    for pyproject in sorted(Path(__file__).resolve().parents[1].glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        for name, target in project.get("entry-points", {}).get("profwin.commands", {}).items():
            homes[name] = project["name"]
            if name not in found:
                if str(pyproject.parent / "src") not in sys.path:
                    sys.path.append(str(pyproject.parent / "src"))
                module, _, attr = target.partition(":")
                found[name] = getattr(importlib.import_module(module), attr)
    return found, homes


def render() -> str:
    """The reference for every ``profwin`` command, as Markdown."""
    from profwin.cli import build_parser

    added, homes = _workspace_commands()
    parser = build_parser(added)
    commands = _subcommands(parser)
    lines = [f"```text\n{_usage(parser)}\n```", ""]
    if parser.description:
        lines += [parser.description, ""]
    lines += _arguments_table(parser)
    lines += ["| command | from | what it does |", "| --- | --- | --- |"]
    lines += [
        f"| [`{name}`](#profwin-{name}) | {homes.get(name, 'profwin-core')} | {_cell(help_text)} |"
        for name, help_text, _ in commands
    ]
    lines.append("")
    for name, help_text, sub in commands:
        lines += [f"## `profwin {name}` {{#profwin-{name}}}", ""]
        if help_text:
            lines += [help_text[0].upper() + help_text[1:] + ".", ""]
        if name in homes:
            lines += [f"A command of {homes[name]} (through the `profwin.commands` entry points).", ""]
        lines += [f"```text\n{_usage(sub)}\n```", ""]
        if sub.description and sub.description != help_text:
            lines += [sub.description, ""]
        lines += _arguments_table(sub)
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: fill the marker in cli.md."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render())


if __name__ == "__main__":
    print(render())
