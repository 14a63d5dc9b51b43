"""`leelaz bench selfplay`: self-play moves/s and visits/s, ours against Leela Zero 0.17 driven
as autogtp drives it (K processes playing genmove loops), same net, same device, same run.

Owns: the mode's command line. Imports: click, tools.bench.common, selfplay.bench (the
measurements themselves).
"""

from __future__ import annotations

import os

import click

from leelaz.selfplay.bench import bench_selfplay
from leelaz.tools import ToolError
from leelaz.tools.bench.common import CONTEXT, IntList, load_line, network_file, \
    reference_binary, say
from leelaz.tools.options import backend_option, cpu_only_option, gpu_option, weights_option

SHIPPED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "weights",
                       "leelaz-6x128.txt.gz")


@click.command("selfplay", context_settings=CONTEXT)
@weights_option("Network for both engines (a BxF gives a tame random one) [default: the "
                "shipped network].", metavar="FILE|BxF")
@click.option("--seconds", type=click.FloatRange(1, None), default=70.0, show_default=True,
              help="Per configuration (start-up included, as autogtp's ms/move).")
@click.option("-v", "--visits", type=click.IntRange(1, None), default=1601, show_default=True,
              help="Visits a move, both engines.")
@click.option("--parallel", type=IntList(), default="8", show_default=True,
              help="Games per process to try.")
@click.option("--workers", type=IntList(), default="1", show_default=True,
              help="Processes to try.")
@click.option("--network-server", is_flag=True,
              help="Ours: the workers share one network process (selfplay --network-server).")
@click.option("-t", "--threads", type=click.IntRange(0, None), default=0,
              help="Leaves per game and evaluation (0 = autogtp's 6).")
@click.option("--reference", default=None, metavar="BINARY",
              help="Leela Zero 0.17 [default: the installed one; '' = none].")
@click.option("--reference-k", type=IntList(), default="1,2,4", show_default=True,
              help="Reference processes to try (its best is compared).")
@click.option("--reference-extra", default="", help="More flags for the reference.")
@cpu_only_option("Both engines on the CPU.")
@gpu_option("Ours: the device id(s), as the engine's --gpu (repeat).")
@click.option("--precision", type=click.Choice(["auto", "single", "half"]), default="auto",
              show_default=True, help="Ours: the engine's --precision.")
@backend_option("Ours (and the backend alone): ")
@click.option("--instant", is_flag=True,
              help="Also each configuration with a network that costs nothing (the host's "
                   "ceiling per process).")
@click.option("--no-peak", is_flag=True,
              help="Skip the backend alone at the best configuration's mean batch.")
def command(weights, seconds, visits, parallel, workers, network_server, threads, reference,
            reference_k, reference_extra, cpu_only, gpu, precision, backend, instant,
            no_peak) -> None:
    """Self-play throughput: leelaz selfplay against Leela Zero 0.17 as autogtp runs it."""
    net = network_file(weights) if weights else os.path.normpath(SHIPPED)
    if reference is None:
        reference = reference_binary() or ""
    elif reference and not os.access(reference, os.X_OK):
        raise ToolError(f"{reference}: not an executable")
    say(load_line())
    rows = bench_selfplay(net, seconds=seconds, visits=visits, parallel=parallel,
                          workers=workers, reference=reference or None,
                          reference_k=reference_k if reference else (),
                          reference_extra=reference_extra, cpu_only=cpu_only, gpus=gpu,
                          instant=instant, peak=not no_peak, say=say, threads=threads,
                          precision=precision, network_backend=backend,
                          network_server=network_server)
    if not rows["ours"]:
        raise ToolError("nothing was measured")
