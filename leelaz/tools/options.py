"""The command-line options the verbs share: the network file, the device, the backend, quiet.

Owns: `weights_option`, `cpu_only_option`, `gpu_option`, `backend_option` and `quiet_option`,
each a click decorator with the option's one spelling, type and choices; a verb passes only
what it says differently (the help text, the default). Imports: click, leelaz.config (the
backend choices and their help).

Why here: the same options were pasted over the verbs; one definition keeps their spelling,
types and choices alike. The engine's own flags stay in cli.py, which parses Leela Zero's
command line its own way.
"""

from __future__ import annotations

import click

from leelaz.config import BACKEND_CHOICES, BACKEND_HELP


def weights_option(help: str, default: str | None = None, metavar: str = "FILE",
                   show_default: bool = False):
    """`-w/--weights`: the network file (FILE), or also a seeded random net (FILE|BxF)."""
    return click.option("-w", "--weights", default=default, show_default=show_default,
                        metavar=metavar, help=help)


def cpu_only_option(help: str = "NumPy, no OpenCL."):
    """`--cpu-only`: no device, the NumPy backend."""
    return click.option("--cpu-only", is_flag=True, help=help)


def gpu_option(help: str = "The device to use (repeatable)."):
    """`--gpu ID`, repeatable: the device id(s), as the engine's --gpu."""
    return click.option("--gpu", type=click.IntRange(0, None), multiple=True, metavar="ID",
                        help=help)


def backend_option(help_prefix: str = ""):
    """`--backend auto|opencl|torch`, the engine's choice; the help says whose network it is."""
    return click.option("--backend", type=click.Choice(BACKEND_CHOICES), default="auto",
                        show_default=True, help=help_prefix + BACKEND_HELP)


def quiet_option(help: str = "No progress bars."):
    """`-q/--quiet`: no progress bar."""
    return click.option("-q", "--quiet", is_flag=True, help=help)
