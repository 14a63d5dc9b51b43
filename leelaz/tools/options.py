"""The command-line options the verbs share: the network file, the device, the backend, quiet.

Owns: `weights_option`, `cpu_only_option`, `gpu_option`, `backend_option` and `quiet_option`,
each a click decorator with the option's one spelling, type and choices; a verb passes only what
it says differently (the help text, the default). `number`, a callback that reads a numeric
option as one `ERROR:` line and exit status 1 when it is bad (click's own ranges say two lines
and exit 2, a usage error, which the verbs keep for their older options).
`processes_by_default`: how many processes self-play's --workers and lz-gate's --jobs start
when not given (one per NVIDIA GPU, selfplay/workers.default_processes). Imports: click,
leelaz.config (the backend choices and their help).

Why here: the same options were pasted over the verbs; one definition keeps their spelling,
types and choices alike. The engine's own flags stay in cli.py, which parses Leela Zero's
command line its own way.
"""

from __future__ import annotations

import click

from leelaz.config import BACKEND_CHOICES, BACKEND_HELP
from leelaz.tools import ToolError


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


def number(kind: type = float, *, least=None, above=None, most=None):
    """A click callback for an option of `kind` (int or float) within the bounds given: its
    value, or a ToolError naming the option, the bound and the value."""
    import math

    def check(ctx, param, value):
        if value is None:
            return None
        name = max(param.opts, key=len)
        whole = kind is int
        try:
            number_ = kind(value)
        except (TypeError, ValueError):
            raise ToolError(f"{name} must be {'a whole number' if whole else 'a number'}, "
                            f"not {value!r}") from None
        if not whole and not math.isfinite(number_):
            raise ToolError(f"{name} must be a finite number, not {value!r}")
        bounds = [f"at least {least}" if least is not None else "",
                  f"above {above}" if above is not None else "",
                  f"at most {most}" if most is not None else ""]
        if ((least is not None and number_ < least) or (above is not None and number_ <= above)
                or (most is not None and number_ > most)):
            raise ToolError(f"{name} must be {' and '.join(b for b in bounds if b)}, "
                            f"not {value!r}")
        return number_
    return check


def processes_by_default(cpu_only: bool, gpu, backend: str) -> int:
    """selfplay/workers.default_processes for a verb's --cpu-only, --gpu and --backend."""
    from leelaz.backends.device_choice import visible_cuda_devices
    from leelaz.config import EngineConfig
    from leelaz.selfplay.workers import default_processes

    cfg = EngineConfig(cpu_only=cpu_only, gpus=tuple(gpu), network_backend=backend)
    return default_processes(cfg, visible_cuda_devices())
