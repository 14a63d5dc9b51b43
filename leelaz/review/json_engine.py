"""`leelaz analysis`: a JSON-lines analysis engine in the shape of KataGo's (its analysis
engine's protocol document), the honest subset, with every position batched with the others.

Owns: `JsonEngine` (queries in, responses out, the positions in flight), `QueryError`,
`parse_query`. Imports: json, game.*, gtp.analysis (lz-analyze's order and avoid/allow),
nn.network (the cache key), selfplay.game (the round's expansion), review.analyse,
review.memo.

Queries, one JSON object per line: `id`, `moves`, `initialStones`, `initialPlayer`, `komi`,
`analyzeTurns`, `maxVisits`, `priority`/`priorities`, `avoidMoves`/`allowMoves`,
`reportDuringSearchEvery`, `includePolicy`; `rules`, `boardXSize`/`boardYSize` (19 only) are
accepted. Actions: `query_version`, `clear_cache`, `terminate` (with `turnNumbers`),
`terminate_all`. Each turn of a query is one position, searched exactly as `lz-analyze` in a
freshly started `leelaz -g -t 1 -v maxVisits -s SEED` would (review/analyse.py), all open
positions in flight together, their leaves in one network call per round; the highest
`priority` starts first, then the earliest query.

Responses: `id`, `turnNumber`, `isDuringSearch`, `moveInfos` (move, visits, winrate, prior,
lcb, order, pv; in lz-analyze's order), `rootInfo` (winrate, visits, currentPlayer), `policy`
(the network's raw policy, row-major from A19, -1 for illegal points, pass last) when asked,
and `noScore: true`: Leela Zero networks have no score or ownership output, so there is no
`scoreLead`, `scoreMean` or ownership, rather than invented numbers (a query asking for
ownership gets a warning). Winrates are Black's unless `--winrates-as` says otherwise.
Errors follow KataGo: `{"error": ..., "field": ..., "id": ...}` for a bad query (nothing of
it is analysed), `{"error": ...}` for a line that is not a JSON object; known KataGo fields
we cannot honour give `{"warning": ..., "field": ..., "id": ...}` and the query goes on.

Each position's search has its own cache (as a fresh engine has), dropped when it finishes;
what the positions share is the memo of the network's answers to the same input rows
(review/memo.py: the turns of one game repeat each other's leaves), which `clear_cache`
empties, so that a position asked for again is evaluated by the network again.
"""

from __future__ import annotations

import heapq
import json
import math
import queue
import threading
import time
from dataclasses import dataclass, field

from leelaz.game.coords import (BLACK, BOARD_SIZE, EMPTY, PASS, RESIGN, WHITE, gtp_vertex,
                                index, parse_gtp_vertex, vertex)
from leelaz.game.state import GameState
from leelaz.gtp.analysis import AnalyzeTags, ordered_rows
from leelaz.nn.network import Network, cache_key
from leelaz.review.analyse import PositionSearch, ReviewSettings, search_params, network_bytes
from leelaz.review.memo import MemoBackend, RowMemo
from leelaz.search.params import UNLIMITED
from leelaz.search.run import Limits
from leelaz.search.search import UCTSearch
from leelaz.selfplay.game import GameInPlay

VERSION = "0.17"
#: Query fields this engine reads.
FIELDS = {"id", "moves", "initialStones", "initialPlayer", "komi", "analyzeTurns",
          "maxVisits", "priority", "priorities", "avoidMoves", "allowMoves",
          "reportDuringSearchEvery", "includePolicy", "rules", "boardXSize", "boardYSize"}
#: KataGo fields that are accepted with a warning: this engine cannot honour them.
UNSUPPORTED = {"includeOwnership": "no ownership: the network has no ownership output",
               "includeMovesOwnership": "no ownership: the network has no ownership output",
               "includeOwnershipStdev": "no ownership: the network has no ownership output",
               "includePVVisits": "not supported", "overrideSettings": "not supported",
               "rootPolicyTemperature": "not supported", "rootFpuReductionMax": "not supported",
               "analysisPVLen": "not supported", "whiteHandicapBonus": "not supported",
               "includeNoResultValue": "not supported"}
NO_SCORE = "Leela Zero networks have no score or ownership output"


class QueryError(Exception):
    """A query that cannot be analysed: its field and the message."""

    def __init__(self, message: str, field_name: str | None = None):
        super().__init__(message)
        self.field = field_name


@dataclass(order=True)
class _Turn:
    """One position of a query, waiting or in flight (ordered: highest priority first,
    then the earliest)."""

    sort_key: tuple
    query_id: str = field(compare=False)
    turn: int = field(compare=False)
    state: GameState = field(compare=False)
    visits: int = field(compare=False)
    restrictions: AnalyzeTags | None = field(compare=False)
    report_every: float | None = field(compare=False)
    include_policy: bool = field(compare=False)
    cancelled: bool = field(default=False, compare=False)
    search: PositionSearch | None = field(default=None, compare=False)
    next_report: float = field(default=0.0, compare=False)


def _color(text, name: str) -> int:
    if text in ("B", "b"):
        return BLACK
    if text in ("W", "w"):
        return WHITE
    raise QueryError(f"player must be \"B\" or \"W\", not {json.dumps(text)}", name)


def _move_list(value, name: str) -> list[tuple[int, int]]:
    if not isinstance(value, list):
        raise QueryError("must be a list of [player, location] pairs", name)
    out = []
    for i, item in enumerate(value):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], str)):
            raise QueryError(f"item {i} must be [player, location]", name)
        color = _color(item[0], name)
        try:
            v = parse_gtp_vertex(item[1])
        except ValueError:
            v = RESIGN
        if v == RESIGN:
            raise QueryError(f"item {i}: not a location: {json.dumps(item[1])}", name)
        out.append((color, v))
    return out


def _restrictions(query: dict, move_num: int) -> AnalyzeTags | None:
    """avoidMoves / allowMoves as lz-analyze's avoid/allow tags: `untilDepth` d covers the
    next d moves, as lz-analyze's UNTIL does."""
    tags = AnalyzeTags()
    for name, target in (("avoidMoves", tags.avoid), ("allowMoves", tags.allow)):
        items = query.get(name)
        if items is None:
            continue
        if not isinstance(items, list):
            raise QueryError("must be a list of {player, moves, untilDepth}", name)
        if name == "allowMoves" and len(items) > 1:
            raise QueryError("the list must have length 1, as KataGo's", name)
        for item in items:
            if not isinstance(item, dict) or set(item) - {"player", "moves", "untilDepth"}:
                raise QueryError("each item must be {player, moves, untilDepth}", name)
            color = _color(item.get("player"), name)
            depth = item.get("untilDepth")
            if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
                raise QueryError("untilDepth must be a positive integer", name)
            moves = item.get("moves")
            if not isinstance(moves, list) or not all(isinstance(m, str) for m in moves):
                raise QueryError("moves must be a list of locations", name)
            for m in moves:
                try:
                    v = parse_gtp_vertex(m)
                except ValueError:
                    v = RESIGN
                if v == RESIGN:
                    raise QueryError(f"not a location: {json.dumps(m)}", name)
                target.append((color, v, move_num + depth - 1))
    return tags if tags.has_move_restrictions else None


def _number(query, name, kind, default, low=None, high=None):
    value = query.get(name, default)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        ok = ok and float(value).is_integer()
    if not ok or (isinstance(value, float) and not math.isfinite(value)):
        raise QueryError(f"must be a{'n integer' if kind is int else ' number'}", name)
    value = kind(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise QueryError(f"out of range: {value}", name)
    return value


def parse_query(query: dict, default_visits: int, seq: int) -> tuple[list[_Turn], list[dict]]:
    """A query's turns and its warnings; QueryError for anything that stops it."""
    qid = query["id"]
    warnings = []
    for name in query:
        if name in UNSUPPORTED:
            if query[name] not in (False, None):
                warnings.append({"warning": UNSUPPORTED[name], "field": name, "id": qid})
        elif name not in FIELDS:
            raise QueryError(f"unknown field {json.dumps(name)}", name)
    if "moves" not in query:
        raise QueryError("required field is missing", "moves")
    for name in ("boardXSize", "boardYSize"):
        if query.get(name, BOARD_SIZE) != BOARD_SIZE:
            raise QueryError(f"only {BOARD_SIZE} is supported", name)
    if "rules" in query and not isinstance(query["rules"], (str, dict)):
        raise QueryError("must be a string or an object", "rules")
    komi = _number(query, "komi", float, 7.5, -150, 150)
    if komi * 2 != int(komi * 2):
        raise QueryError("must be an integer or half-integer", "komi")
    moves = _move_list(query["moves"], "moves")
    stones = _move_list(query.get("initialStones", []), "initialStones")
    visits = _number(query, "maxVisits", int, default_visits, 1)
    report_every = query.get("reportDuringSearchEvery")
    if report_every is not None:
        report_every = _number(query, "reportDuringSearchEvery", float, None, 0.001)
    include_policy = query.get("includePolicy", False)
    if not isinstance(include_policy, bool):
        raise QueryError("must be true or false", "includePolicy")
    turns = query.get("analyzeTurns", [len(moves)])
    if not isinstance(turns, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= len(moves)
            for t in turns):
        raise QueryError(f"must be a list of turn numbers 0..{len(moves)}", "analyzeTurns")
    if "priorities" in query:
        priorities = query["priorities"]
        if not (isinstance(priorities, list) and len(priorities) == len(turns)
                and all(isinstance(p, int) and not isinstance(p, bool) for p in priorities)):
            raise QueryError("must be a list of integers, one per analyzed turn", "priorities")
    else:
        priorities = [_number(query, "priority", int, 0)] * len(turns)
    state = GameState(komi=komi)
    for color, v in stones:
        if v == PASS or state.board.square[v] != EMPTY:
            raise QueryError(f"{gtp_vertex(v)} cannot hold a stone", "initialStones")
        state.play(color, v)
    if stones:
        state.anchor()
    first = query.get("initialPlayer")
    if first is not None:
        state.set_to_move(_color(first, "initialPlayer"))
    elif moves:
        state.set_to_move(moves[0][0])
    elif stones:
        state.set_to_move(BLACK if stones[-1][0] == WHITE else WHITE)
    positions = [state.copy()]
    for i, (color, v) in enumerate(moves):
        if v != PASS and not state.is_legal(color, v):
            raise QueryError(f"move {i} ({'BW'[color]} {gtp_vertex(v)}) is illegal", "moves")
        state.play(color, v)
        if i + 1 < len(moves):
            state.set_to_move(moves[i + 1][0])
        positions.append(state.copy())
    out = []
    for n, (turn, priority) in enumerate(zip(turns, priorities)):
        position = positions[turn]
        out.append(_Turn((-priority, seq, n), qid, turn, position, visits,
                         _restrictions(query, position.move_num), report_every,
                         include_policy))
    return out, warnings


class JsonEngine:
    """Reads queries, searches their positions together, writes responses (see module)."""

    def __init__(self, side, settings: ReviewSettings, out, winrates_as: str = "BLACK"):
        self.side = side
        self.settings = settings
        self.out = out
        self.winrates_as = winrates_as
        self.params, self.cache_entries = search_params(settings, network_bytes(side))
        self.memo = RowMemo(settings.memo_rows)
        self.backend = MemoBackend(side.backend_for(0), self.memo) if settings.memo_rows \
            else side.backend_for(0)
        self.waiting: list[_Turn] = []  # a heap
        self.flying: list[_Turn] = []
        self.seq = 0

    # ---- output ----------------------------------------------------------------------------
    def send(self, obj: dict) -> None:
        self.out.write(json.dumps(obj) + "\n")
        self.out.flush()

    def _view(self, winrate: float, to_move: int) -> float:
        """A side-to-move winrate as the responses report it."""
        if self.winrates_as == "SIDETOMOVE":
            return winrate
        side = BLACK if self.winrates_as == "BLACK" else WHITE
        return winrate if to_move == side else 1.0 - winrate

    def response(self, t: _Turn, result, during: bool) -> dict:
        color = result.color
        infos = []
        for order, (move, visits, winrate, prior, lcb, _, pv) in enumerate(
                ordered_rows(result)):
            infos.append({"move": gtp_vertex(move), "visits": visits,
                          "winrate": self._view(winrate, color), "prior": prior,
                          "lcb": self._view(max(0.0, lcb), color), "order": order,
                          "pv": [gtp_vertex(v) for v in pv]})
        reply = {"id": t.query_id, "turnNumber": t.turn, "isDuringSearch": during,
                 "moveInfos": infos,
                 "rootInfo": {"winrate": self._view(result.root_winrate, color),
                              "visits": result.root_visits, "currentPlayer": "BW"[color]},
                 "noScore": True}
        if t.include_policy and not during:
            reply["policy"] = self._policy(t)
        return reply

    def _policy(self, t: _Turn) -> list[float] | None:
        """The network's policy of the root, KataGo's layout: rows from 19 down, -1 for
        illegal points, pass last."""
        search = t.search
        state = search.root_state
        found = search.search.evaluator.cache.lookup(cache_key(state)) if state else None
        if found is None:
            return None
        color = state.to_move
        policy = []
        for y in range(BOARD_SIZE - 1, -1, -1):
            for x in range(BOARD_SIZE):
                v = vertex(x, y)
                legal = state.board.square[v] == EMPTY and state.is_legal(color, v)
                policy.append(float(found.policy[index(v)]) if legal else -1.0)
        policy.append(float(found.policy[BOARD_SIZE * BOARD_SIZE]))
        return policy

    # ---- input -----------------------------------------------------------------------------
    def handle(self, line: str) -> None:
        """One input line: a query, an action, or an error reply."""
        if not line.strip():
            return
        try:
            query = json.loads(line)
        except ValueError as exc:
            self.send({"error": f"could not parse json: {exc}"})
            return
        if not isinstance(query, dict):
            self.send({"error": "a query must be a JSON object"})
            return
        qid = query.get("id")
        if not isinstance(qid, str):
            self.send({"error": "\"id\" must be a string", "field": "id"})
            return
        try:
            if "action" in query:
                self._action(query)
                return
            turns, warnings = parse_query(query, self.settings.visits, self.seq)
        except QueryError as exc:
            error = {"error": str(exc), "id": qid}
            if exc.field:
                error["field"] = exc.field
            self.send(error)
            return
        self.seq += 1
        for warning in warnings:
            self.send(warning)
        for t in turns:
            heapq.heappush(self.waiting, t)

    def _action(self, query: dict) -> None:
        action = query["action"]
        if action == "query_version":
            self.send({**query, "version": VERSION, "git_hash": "<omitted>"})
        elif action == "clear_cache":  # the memo the positions share (module docstring)
            self.memo.clear()
            self.send(dict(query))
        elif action in ("terminate", "terminate_all"):
            if action == "terminate" and not isinstance(query.get("terminateId"), str):
                raise QueryError("required string field", "terminateId")
            numbers = query.get("turnNumbers")
            if numbers is not None and not (isinstance(numbers, list)
                                            and all(isinstance(n, int) for n in numbers)):
                raise QueryError("must be a list of turn numbers", "turnNumbers")
            self.send(dict(query))
            self._terminate(query.get("terminateId") if action == "terminate" else None,
                            numbers)
        else:
            raise QueryError(f"unknown action {json.dumps(action)}", "action")

    def _terminate(self, qid: str | None, numbers) -> None:
        def chosen(t):
            return (qid is None or t.query_id == qid) and (numbers is None
                                                             or t.turn in numbers)
        kept = []
        for t in self.waiting:
            if chosen(t):
                self.send({"id": t.query_id, "turnNumber": t.turn, "isDuringSearch": False,
                           "noResults": True})
            else:
                kept.append(t)
        heapq.heapify(kept)
        self.waiting = kept
        for t in self.flying:
            if chosen(t):
                t.search.stop_soon()

    # ---- the searches ------------------------------------------------------------------------
    def _start(self, t: _Turn) -> None:
        network = Network(self.side.weights, self.backend, seed=self.settings.seed,
                          symmetric_lookups=True)
        if self.cache_entries is not None:
            network.set_cache_size(self.cache_entries)
        search = UCTSearch(network, self.params, rng=self.settings.seed, log=lambda text: None)
        t.search = PositionSearch(t.state, search,
                                  Limits(t.visits, UNLIMITED, UNLIMITED, pondering=True),
                                  t.restrictions)
        t.next_report = time.monotonic() + (t.report_every or 0.0)
        self.flying.append(t)

    def step(self) -> None:
        """One round: start waiting turns in free places, expand, advance every search, one
        network call, reports during the search."""
        while self.waiting and len(self.flying) < self.settings.parallel:
            self._start(heapq.heappop(self.waiting))
        GameInPlay.expand_waiting([t.search for t in self.flying])
        still = []
        for t in self.flying:
            if t.search.advance() is None:
                still.append(t)
            else:
                self.send(self.response(t, t.search.result, during=False))
        self.flying = still
        for batch in self.side.batches:
            batch.send()
        now = time.monotonic()
        for t in self.flying:
            if t.report_every and now >= t.next_report:
                t.next_report = now + t.report_every
                snapshot = t.search.snapshot()
                if snapshot is not None:
                    self.send(self.response(t, snapshot, during=True))

    def run(self, stdin) -> None:
        """Serve until the input ends and every query has been answered (as KataGo does)."""
        lines: queue.Queue = queue.Queue()

        def read():
            try:
                for line in stdin:
                    lines.put(line)
            finally:
                lines.put(None)

        threading.Thread(target=read, daemon=True, name="analysis-input").start()
        ended = False
        while True:
            idle = not self.waiting and not self.flying
            if idle and ended:
                return
            try:
                item = lines.get(block=idle)
                while True:
                    if item is None:
                        ended = True
                    else:
                        self.handle(item)
                    item = lines.get_nowait()
            except queue.Empty:
                pass
            if self.waiting or self.flying:
                self.step()
