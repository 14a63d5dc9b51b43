"""One network for every search process: the network server and its clients.

Owns: `NetworkServer` (the engine's handle: starts the server process and hands out one
client connection per search process, and one for the engine's own tree), `serve` (the
server's loop: every waiting request in one backend call), `server_main` (the server
process's life), `RemoteBackend` (the Backend seam a search process's Network is given: its
batches go to the server over a pipe), `ServedBackend` (the engine's own Network's backend
once the server is ready: the server's, and its own again if the server goes away) and
`ServerClient` (a spawned self-play worker's `backend(weights)`: its RemoteBackend).
Imports: numpy, backends.base, backends.mux (the join of the clients' rows), processes.

Why: with one network per search process, every process holds its own GPU context and sends
its own batches of 32 leaves; the device takes the contexts in turn, so on wide networks more
processes gave fewer visits per second (docs/performance.md). The server holds the
one context and joins the batches of all its clients that wait into one call, so the device
sees batches of a few hundred rows, where it is efficient, whatever the number of trees. The
engine's own tree starts on the network it loaded itself (its first replies never wait for
the server) and moves onto the server once that is ready; a second context computing beside
the server's would make the device take turns again.

Protocol: one duplex pipe per client. The server first sends ("ready", hello) (a dict: the
backend's `name`, whether it takes `packed` positions, its `precision`) or ("failed", text).
Then the client sends requests as raw bytes: REQUEST (request id, rows, 1 for packed
positions / 0 for float32 planes), then the positions; the server answers each with REPLY
(request id, rows), then `rows` float32 policy rows of 362 logits and `rows` float32 values,
in the order of that client's requests; a backend error answers rows = FAILED and the
message's text. A client quits by closing its end; the server ends when the engine's control
pipe closes or says ("quit",).

Two calls at most are in flight: while the device computes one, the server reads the next
requests and sends them as the second call, so the device is not idle between calls.

The server's loop never writes to a pipe itself: each client's answers go out from a thread
of its own (`_Replies`). A client sends its next request before it reads the last answer
(self-play walks its trees for the next batch meanwhile), and on a GPU both are far larger
than a pipe holds; a loop that wrote the answer while that client wrote its request would
wait on the client as the client waited on it, for good.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import queue
import struct
import sys
import threading
import time
from multiprocessing.connection import wait

import numpy as np

from leelaz.backends.base import INPUT_CHANNELS, POLICY_OUTPUTS, Backend
from leelaz.backends.mux import RoundBatch
from leelaz.processes import end_process

REQUEST = struct.Struct("<IIB")
REPLY = struct.Struct("<II")
FAILED = 0xFFFFFFFF
#: Calls the server keeps on the device at once (one computing, one queued behind it).
CALLS_IN_FLIGHT = 2


class NetworkServer:
    """The engine's handle on the server process: `client(i)` is the connection to give the
    i-th search process (as a Process argument), `close()` ends the server (also when the
    engine dies: its control pipe closes)."""

    def __init__(self, plan, weights_path: str, clients: int, engine_client: bool = False,
                 max_rows: int = 0):
        """`max_rows` (0: the backend's max_batch alone) caps the rows of one backend call."""
        ctx = multiprocessing.get_context("spawn")  # no fork: the engine has threads
        self.control, server_control = ctx.Pipe()
        pairs = [ctx.Pipe() for _ in range(clients + engine_client)]
        self._clients = [ours for ours, _ in pairs]
        #: With `engine_client`, the engine's own connection (see `engine_backend`).
        self.engine_conn = self._clients.pop() if engine_client else None
        self.process = ctx.Process(target=server_main,
                                   args=(server_control, [theirs for _, theirs in pairs],
                                         plan, weights_path, max_rows),
                                   name="leelaz-network", daemon=True)
        self.process.start()
        server_control.close()
        for _, theirs in pairs:
            theirs.close()

    def client(self, index: int):
        return self._clients[index]

    def release_clients(self) -> None:
        """Close the engine's copies of the client ends once the search processes hold
        theirs, so that a client process's death reaches the server as end of file."""
        for conn in self._clients:
            conn.close()

    def engine_backend(self, own: Backend, log=None) -> Backend | None:
        """The engine's own tree's backend on the server, once the server has greeted the
        engine's connection: a ServedBackend over `own`. None while the server still loads
        (never blocks), and for good once it failed to load (`log` says why)."""
        conn = self.engine_conn
        if conn is None:
            return None
        try:
            if not conn.poll():
                return None
            remote = RemoteBackend.connect(conn)
        except (RuntimeError, EOFError, OSError) as exc:
            self.engine_conn = None
            if log is not None:
                log(f"The engine's tree keeps its own network: {exc}\n")
            return None
        self.engine_conn = None  # handed over to the backend
        return ServedBackend(remote, own, log)

    def close(self, timeout: float = 2.0) -> None:
        end_process(self.process, self.control, timeout)


def server_main(control, clients, plan, weights_path: str, max_rows: int = 0) -> None:
    """The server process: open the engine's backend (`plan`, the engine's
    nn/loading.LoadPlan, quiet), greet every client, then serve until the engine quits or
    goes away."""
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stdout is the engine's GTP stream
    try:
        backend = plan.quietly().open_network(weights_path).backend
    except Exception as exc:  # noqa: BLE001 - reported to every client; the engine goes on
        for conn in clients:
            _send(conn, ("failed", f"{type(exc).__name__}: {exc}"))
        return
    hello = {"name": backend.name, "packed": bool(backend.accepts_packed_inputs),
             "precision": backend.precision}
    clients = [conn for conn in clients if _send(conn, ("ready", hello))]
    counters = serve(backend, clients, control, max_rows)
    if counters["calls"]:  # the batches the device saw, on the engine's stderr at its end
        calls = counters["calls"]
        sys.stderr.write(f"Network server ({backend.name}): {counters['rows']} evaluations "
                         f"in {calls} calls, {counters['rows'] / calls:.1f} a call; "
                         f"{1e3 * counters['submit_s'] / calls:.2f} ms a call submitting, "
                         f"{1e3 * counters['answer_s'] / calls:.2f} ms waiting and "
                         f"answering.\n")


def serve(backend: Backend, clients: list, control=None, max_rows: int = 0) -> dict:
    """Answer the clients' requests until every client is gone or `control` ends it; gives
    counters for tests and measurements: `calls`, `rows`, and the seconds spent in the
    backend's submits (`submit_s`: the host's share of a call) and in waiting for answers
    and sending them (`answer_s`). The waiting requests are joined into calls by a
    RoundBatch (backends/mux.py: at most `max_rows` and the backend's max_batch rows a call,
    a request never split)."""
    clients = list(clients)
    replies = _Replies(clients)
    try:
        return _serve(backend, clients, control, max_rows, replies)
    finally:
        replies.close()


def _serve(backend: Backend, clients: list, control, max_rows: int, replies: _Replies) -> dict:
    batch = RoundBatch(_ErrorsKept(backend), max_rows)
    counters = {"calls": 0, "rows": 0, "submit_s": 0.0, "answer_s": 0.0}
    clock = time.perf_counter
    waiting: list = []  # (conn, request id, rows, packed, payload)
    in_flight: collections.deque = collections.deque()  # a call's [(conn, request, share)]
    watched = clients + ([control] if control is not None else [])
    while clients or in_flight:
        for conn in wait(watched, timeout=0 if (in_flight or waiting) else None):
            if conn is control:
                if _control_ends(conn):
                    return counters
                continue
            try:
                data = conn.recv_bytes()
            except (EOFError, OSError):
                clients.remove(conn)
                watched.remove(conn)
                continue
            request, rows, packed = REQUEST.unpack_from(data)
            waiting.append((conn, request, rows, packed, memoryview(data)[REQUEST.size:]))
        if waiting and len(in_flight) < CALLS_IN_FLIGHT:
            began = clock()
            in_flight.extend(_submit(batch, waiting))
            waiting = []
            counters["submit_s"] += clock() - began
            counters["calls"], counters["rows"] = batch.calls, batch.rows
        elif in_flight:
            began = clock()
            _answer(in_flight.popleft(), replies)
            counters["answer_s"] += clock() - began
    return counters


def _control_ends(control) -> bool:
    try:
        return control.recv()[0] == "quit"
    except (EOFError, OSError):
        return True


def _submit(batch: RoundBatch, requests: list) -> list[list]:
    """The waiting requests parked in `batch` and sent: one list of (conn, request id,
    share) per backend call made."""
    parked = []
    for conn, request, rows, packed, payload in requests:
        part = payload if packed else \
            np.frombuffer(payload, dtype=np.float32).reshape(-1, INPUT_CHANNELS, 19, 19)
        parked.append((conn, request, batch.park(part, rows)))
    batch.send()
    calls: list[list] = []
    for entry in parked:
        if calls and calls[-1][0][2].call is entry[2].call:
            calls[-1].append(entry)
        else:
            calls.append([entry])
    return calls


def _answer(call: list, replies: _Replies) -> None:
    """Wait for a call and send each client its rows (or the call's error)."""
    try:
        answers = [share.result() for _, _, share in call]
    except Exception as exc:  # noqa: BLE001 - the clients get the error, the server goes on
        text = f"{type(exc).__name__}: {exc}".encode()
        for conn, request, _ in call:
            replies.send(conn, REPLY.pack(request, FAILED) + text)
        return
    for (conn, request, _), (logits, values) in zip(call, answers):
        logits = np.ascontiguousarray(logits, dtype=np.float32).reshape(-1, POLICY_OUTPUTS)
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        replies.send(conn, REPLY.pack(request, len(values)) + logits.tobytes()
                     + values.tobytes())


class _ErrorsKept(Backend):
    """The served backend as the server's RoundBatch calls it: a submit that raises gives a
    Pending that raises the same error at `result()`, so that the failed call's clients get
    its text and the server goes on."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self.name = backend.name
        self.max_batch = backend.max_batch

    @property
    def accepts_packed_inputs(self) -> bool:
        return self.backend.accepts_packed_inputs

    def submit(self, planes: np.ndarray):
        return self._kept(self.backend.submit, planes)

    def submit_packed(self, packed: bytes, batch: int):
        return self._kept(self.backend.submit_packed, packed, batch)

    @staticmethod
    def _kept(submit, *args):
        try:
            return submit(*args)
        except Exception as exc:  # noqa: BLE001 - raised again at result()
            return _Raises(exc)


class _Raises:
    """A call whose submit failed: `result()` raises its error."""

    __slots__ = ("error",)

    def __init__(self, error: Exception):
        self.error = error

    def result(self):
        raise self.error


def _send(conn, msg) -> bool:
    try:
        conn.send(msg)
        return True
    except (OSError, ValueError):
        return False


class _Replies:
    """The answers on their way to the clients: one thread a client writes its answers in
    order, so that the server's loop goes on reading requests while a client's pipe is full
    (see the module docstring). `close()` lets every thread finish what it was given."""

    def __init__(self, clients: list):
        self._queues: dict = {}
        self._threads = []
        for conn in clients:
            out: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=_write_replies, args=(conn, out),
                                      name="leelaz-network-replies", daemon=True)
            thread.start()
            self._queues[conn] = out
            self._threads.append(thread)

    def send(self, conn, data: bytes) -> None:
        self._queues[conn].put(data)

    def close(self, timeout: float = 2.0) -> None:
        """Wait, `timeout` seconds in all, for the answers given to be written: a client
        that stopped reading must not hold up the server's end."""
        for out in self._queues.values():
            out.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _write_replies(conn, out: queue.SimpleQueue) -> None:
    """One client's answers, in the order given, until None; a client that went away gets
    no more (the server's loop drops it at its end of file)."""
    gone = False
    while (data := out.get()) is not None:
        if gone:
            continue
        try:
            conn.send_bytes(data)
        except (OSError, ValueError):
            gone = True


class ServerClient:
    """A spawned process's `backend(weights)` (selfplay.runner.EngineSide's stand-in for a
    device of its own): the RemoteBackend of its connection to a NetworkServer. Picklable as
    a Process argument (the connection travels with the spawn). Raises RuntimeError when
    the server could not load the network."""

    def __init__(self, conn):
        self.conn = conn

    def __call__(self, weights=None) -> RemoteBackend:
        return RemoteBackend.connect(self.conn)


class RemoteBackend(Backend):
    """A search process's backend: each submit is a request to the network server, answered
    in order (see the module docstring). Asynchronous, so the search walks its tree for the
    next batch while the server computes this one."""

    asynchronous = True

    def __init__(self, conn, hello: dict):
        self.conn = conn
        self.name = hello["name"]
        self.precision = hello.get("precision")
        self._packed = bool(hello["packed"])
        self._next = 0
        self._answers: dict[int, tuple] = {}

    @classmethod
    def connect(cls, conn) -> RemoteBackend:
        """Wait for the server's greeting; raises RuntimeError if it could not load."""
        try:
            kind, detail = conn.recv()
        except (EOFError, OSError) as exc:
            raise RuntimeError("the network server went away") from exc
        if kind != "ready":
            raise RuntimeError(f"the network server failed: {detail}")
        return cls(conn, detail)

    @property
    def accepts_packed_inputs(self) -> bool:
        return self._packed

    def forward(self, planes: np.ndarray):
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray) -> _Answer:
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        return self._request(planes.tobytes(), len(planes), 0)

    def submit_packed(self, packed: bytes, batch: int) -> _Answer:
        return self._request(packed, batch, 1)

    def _request(self, payload: bytes, rows: int, packed: int) -> _Answer:
        request, self._next = self._next, (self._next + 1) & 0x7FFFFFFF
        try:
            self.conn.send_bytes(REQUEST.pack(request, rows, packed) + payload)
        except (OSError, ValueError) as exc:
            raise RuntimeError("the network server went away") from exc
        return _Answer(self, request)

    def _wait(self, request: int) -> tuple[np.ndarray, np.ndarray]:
        while request not in self._answers:
            try:
                data = self.conn.recv_bytes()
            except (EOFError, OSError) as exc:
                raise RuntimeError("the network server went away") from exc
            got, rows = REPLY.unpack_from(data)
            self._answers[got] = (rows, memoryview(data)[REPLY.size:])
        rows, body = self._answers.pop(request)
        if rows == FAILED:
            raise RuntimeError(f"the network server: {bytes(body).decode(errors='replace')}")
        logits = np.frombuffer(body, dtype=np.float32, count=rows * POLICY_OUTPUTS)
        values = np.frombuffer(body, dtype=np.float32, offset=rows * POLICY_OUTPUTS * 4,
                               count=rows)
        return logits.reshape(rows, POLICY_OUTPUTS), values


class _Answer:
    """A request under way: `result()` waits for the server's reply (once)."""

    __slots__ = ("_backend", "_request", "_answer")

    def __init__(self, backend: RemoteBackend, request: int):
        self._backend = backend
        self._request = request
        self._answer = None

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if self._answer is None:
            self._answer = self._backend._wait(self._request)
        return self._answer


class ServedBackend(Backend):
    """The engine's own Network's backend once the network server is ready: its batches go
    to the server like the helpers'. If the server goes away or fails a call, that call and
    every later one go to `own`, the backend the engine loaded at start (`log` says so once),
    so the engine's replies never depend on the server."""

    asynchronous = True

    def __init__(self, remote: RemoteBackend, own: Backend, log=None):
        self.remote = remote
        self.own = own
        self.log = log
        self.name = remote.name
        self.precision = remote.precision
        self.device = own.device
        self.weights = own.weights
        self.max_batch = own.max_batch

    @property
    def served(self) -> bool:
        """Batches still go to the server."""
        return self.remote is not None

    @property
    def accepts_packed_inputs(self) -> bool:
        # Packed only where both take it: a failed call is sent again to `own` as it is.
        own = self.own.accepts_packed_inputs
        return own and (self.remote is None or self.remote.accepts_packed_inputs)

    def forward(self, planes: np.ndarray):
        return self.submit(planes).result()

    def submit(self, planes: np.ndarray):
        return self._submit("submit", planes)

    def submit_packed(self, packed: bytes, batch: int):
        return self._submit("submit_packed", packed, batch)

    def _submit(self, method: str, *args):
        if self.remote is not None:
            try:
                return _ServedAnswer(self, getattr(self.remote, method)(*args), method, args)
            except RuntimeError as exc:
                self._fail(exc)
        return getattr(self.own, method)(*args)

    def _fail(self, exc: Exception) -> None:
        if self.remote is None:
            return
        remote, self.remote = self.remote, None
        try:
            remote.conn.close()
        except OSError:
            pass
        self.name, self.precision = self.own.name, self.own.precision
        if self.log is not None:
            self.log(f"The engine's tree goes back to its own network: {exc}\n")


class _ServedAnswer:
    """A call on the server; if the server fails it, the call is made again on the engine's
    own backend."""

    __slots__ = ("_backend", "_pending", "_method", "_args")

    def __init__(self, backend: ServedBackend, pending, method: str, args: tuple):
        self._backend = backend
        self._pending = pending
        self._method = method
        self._args = args

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        try:
            return self._pending.result()
        except RuntimeError as exc:
            self._backend._fail(exc)
            self._pending = getattr(self._backend.own, self._method)(*self._args)
            return self._pending.result()
