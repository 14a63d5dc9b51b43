"""Loading a network and choosing its backend: the one owner, for every caller.

Owns: `choose` (an EngineConfig and its weights -> a `LoadPlan`), `LoadPlan` (which backend
on which devices at what precision, and the start-up line that says why; frozen and small, so
that it is pickled to the helper processes and the network server, which open the engine's
own choice instead of choosing again), its `open_backend` and `open_network`, and
`read_weights`. Callers: the engine (cli.py), root parallelism's helpers and network server
(they receive the engine's plan), self-play, gating and review (selfplay/runner.EngineSide)
and `bench selfplay` (selfplay/bench.py). Imports: backends (device_choice, weights, base),
nn.network, batching, config.

The rule (Leela Zero 0.17's src/Leela.cpp and src/OpenCLScheduler.cpp, plus leelaz's
--backend):
- `--backend torch`: PyTorch, asked for by name, so never swapped for another backend (on the
  CPU with --cpu-only, one backend per --gpu id); when it cannot run, BackendUnavailable.
- `--cpu-only`: NumPy.
- `--gpu ID...`: OpenCL on those ids, NumPy with a line if OpenCL fails when opened.
- Otherwise (`auto`, `opencl`): `auto` runs PyTorch in half precision (or the --precision
  given) where torch sees CUDA (an NVIDIA GPU with the `torch` extra), since one captured
  CUDA graph a batch costs the search's thread far less than OpenCL's few dozen enqueues,
  and cuDNN's fp16 convolutions use the tensor cores NVIDIA's OpenCL leaves idle
  (docs/performance.md); not with --tune-only, which tunes OpenCL. Else OpenCL when the best
  device is a GPU or a CPU device that beats NumPy on a timed batch
  (backends/device_choice.preferred_backend, cached per machine), else NumPy; chosen so
  before the start, the engine then searches exactly as with --cpu-only (`cpu_search`: its
  threads, its batch policy, its start-up lines).
An automatic PyTorch that fails to open (out of memory, a broken driver) gives way to what
`--backend opencl` would choose: the engine asks `choose(..., torch=False)` (cli._start).
The engine opens an automatic PyTorch in the background (`open_in_background`), answering
GTP meanwhile, and then decides on PyTorch without importing it (`import_torch=False`);
--benchmark and --tune-only open before anything else, as everything else opens.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from leelaz.backends import device_choice
from leelaz.backends.base import Backend, NetWeights
from leelaz.batching import search_batch_size
from leelaz.config import EngineConfig


@dataclass(frozen=True)
class LoadPlan:
    """What `choose` decided, everything `open_backend` and `open_network` need."""

    backend: str  # "numpy", "opencl" (NumPy with a line if OpenCL fails) or "torch"
    gpus: tuple[int, ...] = ()  # --gpu ids (OpenCL's or CUDA's); () = the best / cuda:0
    cpu_only: bool = False  # PyTorch on the CPU (--cpu-only --backend torch)
    precision: str = "auto"
    batch_size: int = 1  # the search's batches: OpenCL is tuned, PyTorch's graphs made, for it
    tune: str = "fast"  # OpenCL's tuner: "fast", or "full" with --full-tuner
    quiet: bool = False  # the backends' own start-up lines are left out (-q, helpers)
    automatic: bool = False  # PyTorch chosen by the rule, not by name: may give way to OpenCL
    cpu_search: bool = False  # the engine searches as with --cpu-only (NumPy chosen before)
    lines: tuple[str, ...] = ()  # why, said first when opened (the race's or cache's answer)
    seed: int | None = None  # the Network's symmetry seed (-s)
    symmetric_lookups: bool = True  # the cache answers a position's symmetries (not -n / -m)

    def open_backend(self, weights: NetWeights, log=None) -> Backend:
        """The plan's backend for `weights`, after the plan's lines. `log` takes each line
        (default: stderr unless quiet). Raises BackendUnavailable only for PyTorch."""
        say = _sayer(self.quiet, log)
        for line in self.lines:
            say(line)
        return device_choice.build_backend(
            weights, self.backend, gpus=self.gpus, cpu_only=self.cpu_only,
            precision=self.precision, batch_size=self.batch_size, tune=self.tune,
            quiet=self.quiet, log=log)

    def open_network(self, path: str, *, weights: NetWeights | None = None, log=None,
                     backend: Backend | None = None):
        """The Network for the file at `path` (`weights` when already read) on the plan's
        backend, or around `backend` when given (a helper's client of the network server).
        Raises as read_weights does, and BackendUnavailable for PyTorch."""
        from leelaz.nn.network import Network

        if weights is None:
            weights = read_weights(path)
        if backend is None:
            backend = self.open_backend(weights, log)
        if backend.name == "numpy":
            _sayer(self.quiet, log)("Initializing CPU-only evaluation.")
        # The cache starts at the network's default size; lz-setoption re-splits memory later.
        return Network(weights, backend, seed=self.seed,
                       symmetric_lookups=self.symmetric_lookups)

    def quietly(self, **changes) -> LoadPlan:
        """This plan for another process (a helper, the network server): it says nothing,
        nor do its backends; `changes` as dataclasses.replace takes them."""
        return replace(self, quiet=True, lines=(), **changes)


def choose(config: EngineConfig, weights: NetWeights | None, *, batch_size: int | None = None,
           torch: bool = True, import_torch: bool = True) -> LoadPlan:
    """The plan for `config` (the rule in the module docstring). `weights`: the network
    about to be opened (the race times one block of its width); None when there is none,
    which measures nothing. `batch_size`: the rows a call will carry (default: the engine's,
    batching.search_batch_size). `torch=False`: not PyTorch by the rule (it failed).
    `import_torch=False`: PyTorch by the rule where NVIDIA's driver and the torch package
    are here, without importing torch to ask it about CUDA (the engine's start, which
    opens the network in the background: `open_in_background` asks there)."""
    batch = batch_size or search_batch_size(config)
    plan = LoadPlan(backend="opencl", gpus=tuple(config.gpus), cpu_only=config.cpu_only,
                    precision=config.precision, batch_size=batch,
                    tune="full" if config.full_tuner else "fast", quiet=config.quiet,
                    cpu_search=config.cpu_only, seed=config.seed,
                    symmetric_lookups=not config.noise and config.randomcnt == 0)
    if config.network_backend == "torch":
        return replace(plan, backend="torch")
    if config.network_backend not in ("auto", "opencl"):
        raise ValueError(f"unknown backend choice {config.network_backend!r}")
    if config.cpu_only:
        return replace(plan, backend="numpy")
    if config.gpus or weights is None:
        return plan
    sees_cuda = device_choice.cuda_for_torch if import_torch else device_choice.torch_may_see_cuda
    if torch and config.network_backend == "auto" and not config.tune_only and sees_cuda():
        precision = config.precision if config.precision_given else "half"
        return replace(plan, backend="torch", precision=precision, automatic=True)
    lines: list[str] = []
    kind = device_choice.preferred_backend(weights, batch, lines.append)
    return replace(plan, backend=kind, lines=tuple(lines),
                   cpu_search=kind == "numpy" and not config.tune_only)


def fallback_line(exc: BaseException) -> str:
    """The start-up line of an automatic PyTorch that gave way to OpenCL."""
    return f"PyTorch unavailable ({' '.join((str(exc) or type(exc).__name__).split())}); " \
        "using OpenCL."


def opens_in_background(config: EngineConfig) -> bool:
    """Whether the engine opens an automatic PyTorch while it already answers GTP
    (`open_in_background`): at every start but --benchmark's and --tune-only's, which
    measure or tune the network before anything else."""
    return not config.benchmark and not config.tune_only


def open_in_background(config: EngineConfig, plan: LoadPlan, weights: NetWeights,
                       log=None):
    """The engine's Network for an automatic PyTorch `plan` (`choose(...,
    import_torch=False)`), its backend opened in a thread (backends/deferred.py): torch's
    import, CUDA's start and the CUDA graphs (4-6 s on an H100) overlap the GUI's first
    commands instead of delaying their answers. In the thread, as at a start that waits:
    if torch sees no CUDA device or fails to open (a broken driver, no memory), the line of
    `fallback_line` and what `--backend opencl` would choose (NumPy's line if that is
    NumPy). The search keeps the GPU's batch size then. The helper search processes and
    the network server open `plan` themselves (root_parallel/pool.py): where PyTorch fails
    in the engine it fails there too, and their analysis answers with the error."""
    from leelaz.backends.base import BackendUnavailable
    from leelaz.backends.deferred import DeferredBackend
    from leelaz.nn.network import Network

    say = _sayer(plan.quiet, log)

    def opener() -> Backend:
        try:
            if not device_choice.cuda_for_torch():
                raise BackendUnavailable("torch sees no CUDA device")
            return plan.open_backend(weights, log)
        except BackendUnavailable as exc:
            say(fallback_line(exc))
            fallback = replace(choose(config, weights, torch=False), lines=())
            backend = fallback.open_backend(weights, log)
            if backend.name == "numpy":
                say("Initializing CPU-only evaluation.")
            return backend

    backend = DeferredBackend(opener, weights=weights, expected_on_gpu=True)
    return Network(weights, backend, seed=plan.seed, symmetric_lookups=plan.symmetric_lookups)


def wait_for_background(network) -> None:
    """The engine's end: a network still opening in the background (`open_in_background`)
    is waited for, so the opener's thread never outlives its engine."""
    from leelaz.backends.deferred import DeferredBackend

    backend = getattr(network, "backend", None)
    if isinstance(backend, DeferredBackend):
        backend.wait()


def read_weights(path: str | None) -> NetWeights | None:
    """The NetWeights at `path` (None without a path); raises OSError or ValueError
    (WeightsError names the file and line). Parsed networks are cached between starts
    (backends/weights_cache.py)."""
    if path is None:
        return None
    from leelaz.backends.weights import load_weights
    return load_weights(path, cache=True)


def _sayer(quiet: bool, log):
    """`log`, or stderr unless `quiet`: where a plan's lines go."""
    def say(line: str) -> None:
        if log is not None:
            log(line)
        elif not quiet:
            print(line, file=sys.stderr, flush=True)
    return say
