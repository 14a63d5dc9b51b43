"""The verbs of the `leelaz` program: `leelaz match`, `leelaz train`, `leelaz bench`, ...

Owns: the registry of verbs (name -> module) and running one, `ToolError`, and `make_folder`
(the output folder of a verb, or one line saying why not). Imports: click, and each verb's
module only when that verb is asked for, so the engine's start-up never pays for the tools.

`leelaz` followed by Leela Zero's flags is the engine (GUIs never send a verb); only when the
first argument is exactly a verb's name does the command line go to that verb. `leelaz -w bench`
therefore still starts the engine on a weights file named `bench`.

Each verb module defines `command`, a click command or group. Adding a verb is one line here.
"""

from __future__ import annotations

import importlib
import os

import click

#: Verb name -> module defining `command`, in the order `leelaz --help` lists them: a network's
#: life (play games, train on them, compare, all three in a loop), then the utilities.
VERBS = {
    "selfplay": "leelaz.tools.selfplay",
    "train": "leelaz.tools.train",
    "match": "leelaz.tools.match",
    "zero": "leelaz.tools.zero",
    "review": "leelaz.tools.review",
    "analysis": "leelaz.tools.analysis",
    "dump-supervised": "leelaz.tools.dump_supervised",
    "weights": "leelaz.tools.weights",
    "bench": "leelaz.tools.bench",
}


class ToolError(click.ClickException):
    """Bad input to a verb: printed as one `ERROR: ...` line, exit status 1."""

    def show(self, file=None) -> None:
        click.echo(f"ERROR: {self.format_message()}", err=True)


def make_folder(folder: str, label: str | None = None) -> None:
    """Make the folder a verb writes into (with its parents), or stop with one line naming it
    (`label`, by default the folder itself) and the reason, before any work is done."""
    label = folder if label is None else label
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise ToolError(f"{label}: {exc.strerror or exc}") from None
    if not os.path.isdir(folder):
        raise ToolError(f"{label}: not a folder")


def is_verb(argv: list[str]) -> bool:
    """True when the command line asks for a verb rather than the engine."""
    return bool(argv) and argv[0] in VERBS


def verb_summary(name: str) -> str:
    """The verb's one-line summary for `leelaz --help`: the first clause of its own help (one
    owner of the text), or why it cannot be loaded here."""
    try:
        command = importlib.import_module(VERBS[name]).command
    except ImportError as exc:
        return f"(unavailable here: {exc})"
    return command.get_short_help_str(limit=200).split("; ")[0].rstrip(".") + "."


def run_verb(argv: list[str]) -> int:
    """Run `leelaz VERB ARGS...`; returns the exit status."""
    name, args = argv[0], list(argv[1:])
    command = importlib.import_module(VERBS[name]).command
    try:
        result = command.main(args=args, prog_name=f"leelaz {name}", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except ToolError as exc:
        exc.show()
        return exc.exit_code
    except click.ClickException as exc:  # usage errors: click's message, then where to look
        where = exc.ctx.command_path if getattr(exc, "ctx", None) else f"leelaz {name}"
        click.echo(f"ERROR: {exc.format_message()}", err=True)
        click.echo(f"Try '{where} --help' for the options.", err=True)
        return exc.exit_code
    return result if isinstance(result, int) else 0
