"""`leelaz weights`: make a seeded random network, describe a weights file, convert text <-> gz.

Owns: the verb's command line. Imports: click, backends.weights (the reader),
backends.random_weights, files, tools.

    leelaz weights random --blocks 6 --filters 128 --seed 1 -o net.txt.gz
    leelaz weights info best-network.gz
    leelaz weights convert net.txt.gz net.txt
"""

from __future__ import annotations

import os

import click

from leelaz.backends.random_weights import make_random_weights
from leelaz.backends.weights import GZIP_MAGIC, WeightsError, load_weights, read_text
from leelaz.files import atomic_open, write_gzip_atomic
from leelaz.tools import ToolError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
def command() -> None:
    """Make, describe and convert Leela Zero weights files."""


@command.command("random", context_settings=CONTEXT)
@click.option("--blocks", type=click.IntRange(0, 100), default=6, show_default=True,
              help="Residual blocks.")
@click.option("--filters", type=click.IntRange(1, 1024), default=128, show_default=True,
              help="Filters (channels) of every convolution.")
@click.option("--seed", type=click.IntRange(0, None), default=1, show_default=True,
              help="The same seed gives the same file, byte for byte.")
@click.option("--tame", is_flag=True,
              help="Scale each residual block's second convolution by 0.2, so deep random nets "
                   "stay finite in fp16 (for benchmarks of 20+ blocks).")
@click.option("--uniform", is_flag=True,
              help="Zero the last layer of both heads: a uniform policy and a value of 0.5 "
                   "everywhere (a Zero run's classic start; the tower stays random).")
@click.option("--version", "file_version", type=click.Choice(["1", "2"]), default="1",
              show_default=True, help="File version (2: the value head is Black's, as ELF's).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="File to write; a name ending in .gz is gzipped.")
def random_command(blocks, filters, seed, tame, uniform, file_version, output) -> None:
    """Write a seeded random network."""
    try:
        make_random_weights(output, blocks, filters, seed, tame=tame, version=int(file_version),
                            uniform=uniform)
    except OSError as exc:
        raise ToolError(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"wrote {output}: {blocks} blocks x {filters} filters, seed {seed}"
               + (", tame" if tame else "") + (", uniform heads" if uniform else ""), err=True)


def _load(path: str):
    try:
        return load_weights(path)
    except WeightsError as exc:
        raise ToolError(str(exc)) from None


@command.command("info", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def info_command(files) -> None:
    """Print each file's version, blocks and filters (one line per file)."""
    for path in files:
        net = _load(path)
        with open(path, "rb") as f:
            packed = "gzip" if f.read(2) == GZIP_MAGIC else "text"
        click.echo(f"{path}: version {net.version}, {net.blocks} blocks x {net.filters} filters,"
                   f" {packed}")


@command.command("convert", context_settings=CONTEXT)
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("target", type=click.Path(dir_okay=False))
def convert_command(source, target) -> None:
    """Copy SOURCE to TARGET, gzipped when TARGET ends in .gz, as plain text otherwise.

    The text is kept byte for byte; SOURCE is checked to be a valid network first.
    """
    _load(source)
    text = read_text(source)
    if os.path.abspath(source) == os.path.abspath(target):
        raise ToolError(f"{target}: the target is the source")
    try:
        if target.endswith(".gz"):
            write_gzip_atomic(target, text, level=9)
        else:
            with atomic_open(target, "wb") as f:
                f.write(text)
    except OSError as exc:
        raise ToolError(f"cannot write {target}: {exc.strerror or exc}") from None
    click.echo(f"wrote {target} ({'gzip' if target.endswith('.gz') else 'text'})", err=True)
