"""GTP commands that search: genmove, kgs-genmove_cleanup, lz-analyze, lz-genmove_analyze,
lz-setoption, gomill-explain_last_move, pondering, and the search part of place_free_handicap.

Owns: `SearchCommands` and `register(engine)`. Imports: gtp.protocol, gtp.analysis,
game.coords, search.search, search.params (`SearchParams.from_config` maps the settings),
root_parallel.pool, config.

Wiring (done by `register` on engine.session, so the composition root only has to set the
session's network first):
    search          root_parallel.pool.make_search(network, config, weights path,
                    SearchParams.from_config(config), load plan, seed, diag): a UCTSearch, or with
                    several search processes (batching.search_processes: by default on a
                    GPU) a MultiTreeSearch (helper processes searching the same positions)
    ponder          () -> None, think on the opponent's time until input if pondering is
                    allowed (time_left uses it)
    choose_handicap_stone(state) -> vertex, a NOPASS search for Black (free handicap)
A composition root that wants other search settings (batch size, say) may assign its own
`session.search` before or after `register`; the handlers always read `session.search`.
The memory budget is split by leelaz/memory.py, the batch size chosen by leelaz/batching.py.

Every search is recorded for training (`session.recorder.record(state, result)`, when a
recorder is there) before the move is played, as Leela Zero does.
"""

from __future__ import annotations

import dataclasses

from leelaz.game.numbers import cpp_int
from leelaz.memory import DEFAULT_CACHE_PCT, DEFAULT_MAX_MEMORY_BYTES, MIB, split_memory
from leelaz.game.coords import BLACK, PASS, RESIGN, gtp_vertex, parse_color
from leelaz.gtp.analysis import PARSE_ERROR, AnalyzeTags, format_info_line, parse_analyze_tags
from leelaz.gtp.protocol import Command, GtpError
from leelaz.search.params import UNLIMITED, SearchParams
from leelaz.search.search import UCTSearch
from leelaz.root_parallel.pool import make_search

SETOPTION_LIST = (
    "option name Maximum Memory Use (MiB) type spin default 2048 min 128 max 131072",
    "option name Percentage of memory for cache type spin default 10 min 1 max 99",
    "option name Visits type spin default 0 min 0 max 1000000000",
    "option name Playouts type spin default 0 min 0 max 1000000000",
    "option name Lagbuffer type spin default 0 min 0 max 3000",
    "option name Resign Percentage type spin default -1 min -1 max 30",
    "option name Pondering type check default true",
)


class SearchCommands:
    def __init__(self, engine):
        self.engine = engine
        self.session = engine.session
        self.max_memory_bytes = DEFAULT_MAX_MEMORY_BYTES
        self.cache_pct = DEFAULT_CACHE_PCT

    # ---- helpers ----------------------------------------------------------------------
    @property
    def search(self) -> UCTSearch:
        search = self.session.search
        if search is None or search.evaluator is None:
            raise GtpError("no network loaded")
        return search

    def _record(self, state, result) -> None:
        recorder = self.session.recorder
        if recorder is not None:
            recorder.record(state, result)

    def _genmove(self, color: int, nopass: bool = False, tags: AnalyzeTags | None = None,
                 stream=None) -> int:
        """Search for `color`, record, play the move; returns it (always legal or pass)."""
        search = self.search
        state = self.session.state
        state.set_to_move(color)
        on_progress = None
        if stream is not None and tags is not None and tags.interval_cs:
            def on_progress(result):
                stream.write(format_info_line(result, tags.min_moves))
        # No should_stop: a genmove always gets its full search, as in Leela Zero, whatever
        # follows it in the input (quit, end of input) and whenever that arrives; scripts and
        # match runners depend on it. Only pondering and lz-analyze stop on input.
        result = search.think(state, color, nopass=nopass, restrictions=tags,
                              on_progress=on_progress,
                              progress_interval_cs=tags.interval_cs if tags else 0,
                              defer_tree=True)
        self.engine.after_reply(search.release_discarded)  # off the clock
        move = result.move
        if move not in (PASS, RESIGN) and not state.is_legal(color, move):
            move = PASS  # never reply with an illegal move
        self._record(state, result)
        state.play(color, move)
        return move

    def _may_ponder(self) -> bool:
        search = self.session.search
        return (search is not None and search.evaluator is not None and search.params.ponder
                and self.session.state.resigned is None)

    def ponder_if_allowed(self) -> None:
        """Pondering after time_left: only when allowed (not --noponder, nobody resigned)."""
        if self._may_ponder():
            self.ponder()

    def ponder(self, tags: AnalyzeTags | None = None, stream=None) -> None:
        """Search the current position until a new input line arrives (or a limit)."""
        search = self.session.search
        if search is None or search.evaluator is None:
            return
        on_progress = None
        if stream is not None and tags is not None and tags.interval_cs:
            def on_progress(result):
                stream.write(format_info_line(result, tags.min_moves))
        search.ponder(self.session.state, should_stop=self.engine.input_pending,
                      on_progress=on_progress,
                      progress_interval_cs=tags.interval_cs if tags else 0,
                      restrictions=tags, defer_tree=True)

    def _tags(self, cmd: Command) -> AnalyzeTags:
        state = self.session.state
        try:
            return parse_analyze_tags(cmd.args, state.to_move, state.move_num)
        except ValueError:
            raise GtpError(PARSE_ERROR) from None

    # ---- commands ---------------------------------------------------------------------
    def genmove(self, cmd: Command) -> str:
        try:
            color = parse_color(cmd.args[0]) if cmd.args else None
        except ValueError:
            color = None
        if color is None:
            raise GtpError("syntax error")
        move = self._genmove(color)
        if self._may_ponder():
            self.engine.after_reply(self.ponder)
        return gtp_vertex(move)

    def genmove_cleanup(self, cmd: Command) -> str:
        if not cmd.args:
            raise GtpError("syntax not understood")
        try:
            color = parse_color(cmd.args[0])
        except ValueError:
            raise GtpError("syntax error") from None
        self.session.state.set_passes(0)
        move = self._genmove(color, nopass=True)
        if self._may_ponder():
            self.engine.after_reply(self.ponder)
        return gtp_vertex(move)

    def analyze(self, cmd: Command) -> str | None:
        tags = self._tags(cmd)
        self.search  # noqa: B018  (raises "no network loaded" before the reply starts)
        stream = self.engine.stream_reply(cmd)
        state = self.session.state
        if state.resigned is None:
            state.set_to_move(tags.who)
            self.ponder(tags, stream)
        stream.close()
        return None

    def genmove_analyze(self, cmd: Command) -> str | None:
        tags = self._tags(cmd)
        self.search  # noqa: B018
        stream = self.engine.stream_reply(cmd)
        move = self._genmove(tags.who, tags=tags, stream=stream)
        stream.write(f"play {gtp_vertex(move)}\n")
        if self._may_ponder():
            self.ponder(tags, stream)
        stream.close()
        return None

    def explain_last_move(self, cmd: Command) -> str:
        search = self.session.search
        text = search.explanation if search is not None else ""
        return text + "\n" if text else ""

    def choose_handicap_stone(self, state) -> int:
        """One free-handicap stone chosen by a NOPASS, no-resign search for Black."""
        search = self.search
        result = search.think(state, BLACK, nopass=True, noresign=True)
        move = result.move
        if move in (PASS, RESIGN) or not state.is_legal(BLACK, move):
            return PASS
        return move

    # ---- lz-setoption -----------------------------------------------------------------
    def setoption(self, cmd: Command) -> str:
        args = list(cmd.args)
        if not args:
            return "\n" + "\n".join(SETOPTION_LIST)
        if not args[0].startswith("name"):
            raise GtpError("incorrect syntax for lz-setoption")
        words = args[1:]
        if "value" in words:
            at = words.index("value")
            name, value_words = " ".join(words[:at]), words[at + 1:]
        else:
            name, value_words = " ".join(words), []
        value = " ".join(value_words)
        return self._set(name.lower(), value)

    def _set(self, name: str, value: str) -> str:
        search = self.session.search
        params = search.params if search is not None else None
        if name == "maximum memory use (mib)":
            mib = cpp_int(value)
            if not 128 <= mib <= 131072:
                raise GtpError("incorrect value")
            return self._set_memory(mib * MIB, self.cache_pct)
        if name == "percentage of memory for cache":
            pct = cpp_int(value)
            if not 1 <= pct <= 99:
                raise GtpError("incorrect value")
            return self._set_memory(self.max_memory_bytes, pct)
        if name == "visits":
            self._replace(max_visits=cpp_int(value) or UNLIMITED)
            return ""
        if name == "playouts":
            n = cpp_int(value)
            if n and params is not None and params.ponder:
                raise GtpError("incorrect value")
            self._replace(max_playouts=n or UNLIMITED)
            return ""
        if name == "lagbuffer":
            self._replace(lagbuffer_cs=cpp_int(value))
            return ""
        if name == "resign percentage":
            self._replace(resign_pct=cpp_int(value))
            return ""
        if name == "pondering":
            if value == "true":
                if params is not None and params.max_playouts < UNLIMITED:
                    raise GtpError("incorrect value")
                self._replace(ponder=True)
            elif value == "false":
                self._replace(ponder=False)
            else:
                raise GtpError("incorrect value")
            return ""
        raise GtpError("Unknown option")

    def _replace(self, **changes) -> None:
        search = self.session.search
        if search is not None:
            search.params = dataclasses.replace(search.params, **changes)

    def _network_bytes(self) -> int:
        network = self.session.network
        return network.weights_bytes() if network is not None else 0

    def _set_memory(self, total: int, pct: int) -> str:
        """LZ's set_max_memory (leelaz/memory.py): split what the network leaves of `total`
        bytes between cache and tree; returns the `Setting max tree size ...` line."""
        try:
            split = split_memory(total, pct, self._network_bytes())
        except ValueError as exc:
            raise GtpError(str(exc)) from None
        self.max_memory_bytes, self.cache_pct = total, pct
        self._replace(max_tree_bytes=split.max_tree_bytes)
        network = self.session.network
        if network is not None:
            network.set_cache_size(split.cache_entries)
        return split.line


def register(engine) -> SearchCommands:
    """Add the search commands; create the session's search from its network if not set."""
    group = SearchCommands(engine)
    session = engine.session
    if session.search is None:
        cfg = session.config
        session.search = make_search(session.network, cfg, session.weights_path,
                                     SearchParams.from_config(cfg),
                                     plan=session.load_plan,
                                     rng=cfg.seed, log=engine.diag)
    if session.network is not None:
        # As LZ at start-up: the default budget sets the tree limit and the cache size. The
        # line is a start-up line, which --benchmark keeps quiet (LZ loads with cfg_quiet).
        try:
            line = group._set_memory(group.max_memory_bytes, group.cache_pct)
        except GtpError as exc:  # a network too big for 5.2 GB: keep the defaults
            line = str(exc)
        if not session.config.benchmark:
            engine.diag(line + "\n")
    for event in ("clear_board", "boardsize", "loadsgf"):
        engine.subscribe(event, lambda: session.search.reset())
    session.ponder = group.ponder_if_allowed
    session.choose_handicap_stone = group.choose_handicap_stone
    engine.add_command("genmove", group.genmove)
    engine.add_command("kgs-genmove_cleanup", group.genmove_cleanup)
    engine.add_command("lz-analyze", group.analyze)
    engine.add_command("lz-genmove_analyze", group.genmove_analyze)
    engine.add_command("lz-setoption", group.setoption)
    engine.add_command("gomill-explain_last_move", group.explain_last_move)
    return group
