"""The engine's search when several processes search each position (--search-processes N):
`MultiTreeSearch`.

Owns: `MultiTreeSearch` (a UCTSearch that has helper processes search the same root as its own
tree and reports the merged root statistics) and `make_search` (the engine's search: this one
or a plain UCTSearch, by batching.search_processes). Imports: batching, search.search,
search.merge, search.params, root_parallel.helper, backends.remote.

Why: on a GPU the network answers faster than one Python thread can walk a tree (about
120-250 us a playout in mid-game), so a single tree leaves the GPU idle most of the time.
Python threads would share the one interpreter lock, so the other searches run in processes,
each with its own tree of the same position: root parallelism. On a device their batches go
to one network server process (backends/remote.py): one GPU context, the trees' waiting
batches joined into calls of a few hundred rows (each helper holding its own network and
context made the device take turns, and wide networks got slower with more processes). The
engine's own tree keeps everything Leela Zero's search does (the clock, time management's
early stop, the stderr statistics, tree reuse). It starts on its own network, so nothing
waits for the server, and in analysis its Network's batches go to the server from the first
call or progress report after the server is ready (`ServedBackend`, back to its own network
if the server fails): a second context busy beside the server's would make the device take
turns again.
At every progress report and at the end of a call the helpers' root statistics are merged
into a stand-in root (search/merge.py) that the `info` lines, the move choice, resignation
and the training record read (the `gather_reports` step and the `report_root` read of
UCTSearch).

What it buys, measured (docs/performance.md): on an H100 or H200 with 16 cores, 8 processes
and the server analyse at 2.3-2.9 times Leela Zero's best setting on 6x128, 20x256 and
40x256 (one tree: 0.45-0.9 times), and at fixed visits (on the CPU) merged trees choose
about as well as one tree of all their visits. At 0.5 s a move, though, they have not played
as well as Leela Zero's one tree: each tree makes fewer playouts than it does. On the host
(NumPy) the network is the limit, so there it is one tree by default
(batching.search_processes).

Play and analysis: the helpers search with the engine in analysis only (lz-analyze, and
pondering), where the user watches the visits and the root's statistics grow. A move on the
clock (genmove and its kin) is the engine's tree alone, on its own network: at 0.5 s a move
several trees, each with fewer playouts than Leela Zero's one, lost to it, and the helpers'
start and stop and the trips to the server cost the one tree playouts (docs/performance.md).
In analysis the engine's tree evaluates on the server once it is ready; on the clock the
server stands idle, so the tree's own context has the device to itself.

When the helpers stay idle (the engine's tree alone searches): on the clock (above); until
they have loaded their networks (they start in the background, so the first GTP reply does
not wait for them); with a visit or playout limit (`-v`, `-p`, lz-setoption), which counts
one tree's visits; in the dynamic-komi modes; with lz-analyze's avoid/allow restrictions. A
helper that fails or does not stop in time is dropped, and the engine goes on with the
others.
"""

from __future__ import annotations

import atexit
import time
from typing import TYPE_CHECKING

from leelaz.batching import search_processes
from leelaz.search.merge import merged_root
from leelaz.search.params import UNLIMITED
from leelaz.search.search import UCTSearch

if TYPE_CHECKING:  # imported when helpers start: multiprocessing stays out of a plain start
    from leelaz.root_parallel.helper import HelperProcess
    from leelaz.backends.remote import NetworkServer

#: How long the end of a call waits for a helper's last report.
STOP_SECONDS = 5.0


class MultiTreeSearch(UCTSearch):
    """A UCTSearch whose calls are also searched by helper processes (module docstring).

    `helpers` are started HelperProcess handles; `close()` ends them (also at exit)."""

    def __init__(self, evaluator, params=None, rng=None, log=None, *,
                 helpers: list[HelperProcess], server: NetworkServer | None = None):
        super().__init__(evaluator, params, rng=rng, log=log)
        self.helpers = list(helpers)
        self.server = server
        self._seq = 0
        self._job: list[HelperProcess] = []  # helpers searching the current call
        self._reports: list = []  # their last reports, for the final merge
        self._analysing = False  # the current call is a ponder (lz-analyze, pondering)
        self._own_backend = getattr(evaluator, "backend", None)
        self._served = None  # the own tree's ServedBackend once the server is ready
        atexit.register(self.close)

    # ------------------------------------------------------------------ the calls
    def think(self, state, color=None, **kwargs):
        """A move on the clock (genmove and its kin): the own tree alone, on its own
        network (module docstring: "Play and analysis")."""
        self._analysing = False
        try:
            return super().think(state, color, **kwargs)
        finally:
            self._stop_job()

    def ponder(self, state, **kwargs):
        """lz-analyze and pondering: every tree, on the network server once it is ready.
        The own tree is written back whole (no `defer_tree`): the merged statistics at the
        end walk it (search/merge.py)."""
        self._analysing = True
        try:
            return super().ponder(state, **{**kwargs, "defer_tree": False})
        finally:
            self._analysing = False
            self._stop_job()

    def start(self, state, color=None, restrictions=None, started=None):
        self._choose_backend()
        run = super().start(state, color, restrictions, started)
        self._stop_job()  # a call that ended in an error left it running
        self._reports = []
        if self._analysing and self._helpers_may_search(restrictions):
            ready = []
            for helper in self.helpers:
                helper.read()
                if helper.ready:
                    ready.append(helper)
            if ready:
                self._seq += 1
                for helper in ready:
                    helper.search(self._seq, run.root_state, self.params)
                self._job = [h for h in ready if not h.dead]
        return run

    def _choose_backend(self) -> None:
        """The own tree's backend for this call: in analysis the network server's, once it
        is ready (one context on the device with the helpers' batches); on the clock its own
        network, which answers a lone tree's small batches without a trip to the server."""
        network = self.evaluator
        if network is None or self._own_backend is None:
            return
        if self._analysing and self._served is None and self.server is not None \
                and self.server.engine_conn is not None:
            self._served = self.server.engine_backend(self._own_backend, self.log)
            if self._served is not None:
                self.log("The engine's tree evaluates on the network server in analysis "
                         f"({self._served.name}).\n")
        network.backend = self._served if self._analysing and self._served else \
            self._own_backend

    def _helpers_may_search(self, restrictions) -> bool:
        p = self.params
        return (p.max_visits >= UNLIMITED and p.max_playouts >= UNLIMITED
                and self.dynamic_komi is None
                and not (restrictions is not None and restrictions.has_move_restrictions))

    def gather_reports(self, final: bool) -> None:
        """Before a report: at the end of a call (`final`) stop the helpers, keeping their
        last reports; at a progress report read each helper's latest report and ask for the
        next, and in analysis move the own tree onto the server if it became ready meanwhile
        (a long lz-analyze started before the server was up)."""
        if final:
            self._stop_job()
            return
        if self._analysing:
            self._choose_backend()
        for helper in self._job:
            helper.read()
            helper.ask()  # answered after its current batch: read at the next report

    def merges_reports(self) -> bool:
        return bool(self._job)

    def report_root(self, root, final: bool):
        """The own root merged with the helpers' reports as `gather_reports` left them: their
        last ones at the end of a call (`final`), else their latest. Only reads."""
        if final:
            return merged_root(root, self._reports)
        if not self._job:
            return root
        return merged_root(root, [h.report for h in self._job if h.report is not None])

    def _stop_job(self) -> None:
        """Stop the helpers' search, keeping their last reports for the final merge."""
        job, self._job = self._job, []
        if not job:
            return
        for helper in job:
            helper.send("stop", helper.seq)
        deadline = time.monotonic() + STOP_SECONDS
        for helper in job:
            helper.wait_final(deadline)
            if helper.dead:
                self.log(f"search process {helper.process.name} dropped: {helper.failure}\n")
        self._reports = [h.report for h in job if h.final and h.report is not None]
        self.helpers = [h for h in self.helpers if not h.dead]

    # ------------------------------------------------------------------ the rest
    def reset(self) -> None:
        super().reset()
        for helper in self.helpers:
            helper.send("reset")

    def close(self) -> None:
        """End the helper processes and the network server."""
        helpers, self.helpers, self._job = self.helpers, [], []
        for helper in helpers:
            helper.close()
        server, self.server = self.server, None
        if server is not None:
            server.close()


#: OpenCL's CL_DEVICE_TYPE_GPU bit of a pyopencl Device's `type`.
_CL_DEVICE_TYPE_GPU = 4


def runs_on_gpu(network) -> bool:
    """The network's backend computes on a GPU: asynchronous (a device works while Python
    goes on) and, for OpenCL, not a CPU device, where the network is the limit as on NumPy.
    Evaluators other than a Network (tests', benchmarks') have no backend: the host. A
    backend still being opened answers what it is expected to be, without waiting."""
    backend = getattr(network, "backend", None)
    if getattr(backend, "expected_on_gpu", None) is not None and not backend.ready:
        return backend.expected_on_gpu  # still being opened (backends/deferred.py)
    if not getattr(backend, "asynchronous", False):
        return False
    kind = getattr(getattr(backend, "device", None), "type", None)
    if isinstance(kind, int):  # a pyopencl Device (torch's device type is a string)
        return bool(kind & _CL_DEVICE_TYPE_GPU)
    return True


def make_search(network, cfg, weights_path: str | None, params, *, plan=None,
                rng=None, log=None, shared_network: bool | None = None):
    """The engine's search: a MultiTreeSearch with batching.search_processes(cfg) - 1 helper
    processes when that is more than one (and the network came from a file that the helpers
    open with `plan`, the engine's nn/loading.LoadPlan), else a UCTSearch.

    `shared_network`: the helpers' batches go to one network server process
    (backends/remote.py) instead of a network each; None decides by the engine's backend:
    shared on a GPU (one context, big batches; `runs_on_gpu`), not on the host, where each
    helper's own network computes on its own core."""
    on_device = runs_on_gpu(network)
    processes = search_processes(cfg, on_device)
    if processes <= 1 or network is None or not weights_path or plan is None:
        return UCTSearch(network, params, rng=rng, log=log)
    from leelaz.root_parallel.helper import HelperProcess

    if shared_network is None:
        shared_network = on_device
    server = None
    if shared_network:
        from leelaz.backends.remote import NetworkServer
        server = NetworkServer(plan, weights_path, processes - 1, engine_client=True)
    helpers = [HelperProcess(plan, weights_path, i,
                             server=server.client(i) if server else None)
               for i in range(processes - 1)]
    if server is not None:
        server.release_clients()
    search = MultiTreeSearch(network, params, rng=rng, log=log, helpers=helpers, server=server)
    shared = ", their networks in one server process" if server else ""
    search.log(f"Searching in {processes} processes, one tree each{shared}.\n")
    return search
