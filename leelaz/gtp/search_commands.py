"""GTP commands that search: genmove, kgs-genmove_cleanup, lz-analyze, lz-genmove_analyze,
lz-setoption, gomill-explain_last_move, pondering, and the search part of place_free_handicap.

Owns: `SearchCommands`, `register(engine)`, and `params_from_config` (EngineConfig ->
SearchParams). Imports: gtp.protocol, gtp.analysis, game.coords, search.search,
search.params, config.

Wiring (done by `register`, so the composition root only has to set `engine.network` first):
    engine.search   UCTSearch(engine.network, params_from_config(engine.config), seed, diag)
    engine.ponder   () -> None, think on the opponent's time until input if pondering is
                    allowed (time_left uses it)
    engine.choose_handicap_stone(state) -> vertex, a NOPASS search for Black (free handicap)
A composition root that wants other search settings (batch size, say) may assign its own
`engine.search` before or after `register`; the handlers always read `engine.search`.

Every search is recorded for training (`engine.recorder.record(state, result)`, when a
recorder is there) before the move is played, as Leela Zero does.
"""

from __future__ import annotations

import dataclasses

from leelaz.config import resolve_threads
from leelaz.game.coords import BLACK, PASS, RESIGN, gtp_vertex, parse_color
from leelaz.gtp.analysis import PARSE_ERROR, AnalyzeTags, format_info_line, parse_analyze_tags
from leelaz.gtp.protocol import Command, GtpError
from leelaz.search.params import UNLIMITED, SearchParams
from leelaz.search.search import UCTSearch

MIB = 1024 * 1024
#: Leela Zero's estimate per NN cache entry, bytes.
CACHE_ENTRY_BYTES = 1468
#: Memory charged for the engine itself besides the weights (LZ counts 85 MiB per GPU).
BASE_OVERHEAD_BYTES = 85 * MIB
#: Leela Zero's start-up memory budget (GTP::setup_default_parameters): 5,200,000,000 bytes, of
#: which 10% for the network cache; what `percentage of memory for cache` splits until
#: `maximum memory use` is set.
DEFAULT_MAX_MEMORY_BYTES = 5_200_000_000
DEFAULT_CACHE_PCT = 10

SETOPTION_LIST = (
    "option name Maximum Memory Use (MiB) type spin default 2048 min 128 max 131072",
    "option name Percentage of memory for cache type spin default 10 min 1 max 99",
    "option name Visits type spin default 0 min 0 max 1000000000",
    "option name Playouts type spin default 0 min 0 max 1000000000",
    "option name Lagbuffer type spin default 0 min 0 max 3000",
    "option name Resign Percentage type spin default -1 min -1 max 30",
    "option name Pondering type check default true",
)


#: Leaves per evaluate call when neither -t nor --batchsize is given and the network may
#: run on OpenCL. LZ's own default (10 threads) left the H100 idle most of the time: 984
#: visits/s on the shipped net against 2,700-3,500 at 32. The search's ramp (SearchParams.
#: visits_per_pending_leaf) keeps small searches from paying for it in strength.
DEFAULT_OPENCL_SEARCH_BATCH = 32


def search_batch_size(cfg) -> int:
    """Leaves per evaluate call: LZ's thread count, or DEFAULT_OPENCL_SEARCH_BATCH when
    OpenCL may be used and neither -t nor --batchsize was given. The OpenCL backend is tuned
    for this size too (cli.load_network)."""
    # LZ runs `threads` playouts at once (each thread, or each slot of a GPU batch);
    # collecting that many leaves per evaluate call is the equivalent.
    try:
        batch_size = resolve_threads(cfg)[0]
    except ValueError:
        batch_size = 1
    if not cfg.cpu_only and not cfg.threads and not cfg.batchsize:
        batch_size = max(batch_size, DEFAULT_OPENCL_SEARCH_BATCH)
    return max(1, batch_size)


def params_from_config(cfg, batch_size: int | None = None) -> SearchParams:
    """SearchParams from the command-line settings (EngineConfig); the batch size defaults
    to `search_batch_size(cfg)`."""
    if batch_size is None:
        batch_size = search_batch_size(cfg)
    return SearchParams(
        max_playouts=cfg.playouts or UNLIMITED, max_visits=cfg.visits or UNLIMITED,
        timemanage=cfg.timemanage, lagbuffer_cs=cfg.lagbuffer, noise=cfg.noise,
        random_count=cfg.randomcnt, random_visits=cfg.randomvisits,
        random_temp=cfg.randomtemp, dumbpass=cfg.dumbpass, resign_pct=cfg.resignpct,
        ponder=cfg.ponder, quiet=cfg.quiet, batch_size=max(1, batch_size))


def _leading_int(text: str) -> int:
    """C++ `stream >> int`: leading sign and digits, 0 when there are none."""
    digits = ""
    for i, ch in enumerate(text):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


class SearchCommands:
    def __init__(self, engine):
        self.engine = engine
        self.max_memory_bytes = DEFAULT_MAX_MEMORY_BYTES
        self.cache_pct = DEFAULT_CACHE_PCT

    # ---- helpers ----------------------------------------------------------------------
    @property
    def search(self) -> UCTSearch:
        search = getattr(self.engine, "search", None)
        if search is None or search.evaluator is None:
            raise GtpError("no network loaded")
        return search

    def _record(self, state, result) -> None:
        recorder = getattr(self.engine, "recorder", None)
        if recorder is not None:
            recorder.record(state, result)

    def _genmove(self, color: int, nopass: bool = False, tags: AnalyzeTags | None = None,
                 stream=None) -> int:
        """Search for `color`, record, play the move; returns it (always legal or pass)."""
        search = self.search
        state = self.engine.state
        state.set_to_move(color)
        on_progress = None
        if stream is not None and tags is not None and tags.interval_cs:
            def on_progress(result):
                stream.write(format_info_line(result, tags.min_moves))
        result = search.think(state, color, nopass=nopass, restrictions=tags,
                              on_progress=on_progress, should_stop=self.engine.quit_pending,
                              progress_interval_cs=tags.interval_cs if tags else 0)
        move = result.move
        if move not in (PASS, RESIGN) and not state.is_legal(color, move):
            move = PASS  # never reply with an illegal move
        self._record(state, result)
        state.play(color, move)
        return move

    def _may_ponder(self) -> bool:
        search = getattr(self.engine, "search", None)
        return (search is not None and search.evaluator is not None and search.params.ponder
                and self.engine.state.resigned is None)

    def ponder_if_allowed(self) -> None:
        """Pondering after time_left: only when allowed (not --noponder, nobody resigned)."""
        if self._may_ponder():
            self.ponder()

    def ponder(self, tags: AnalyzeTags | None = None, stream=None) -> None:
        """Search the current position until a new input line arrives (or a limit)."""
        search = getattr(self.engine, "search", None)
        if search is None or search.evaluator is None:
            return
        on_progress = None
        if stream is not None and tags is not None and tags.interval_cs:
            def on_progress(result):
                stream.write(format_info_line(result, tags.min_moves))
        search.ponder(self.engine.state, should_stop=self.engine.input_pending,
                      on_progress=on_progress,
                      progress_interval_cs=tags.interval_cs if tags else 0,
                      restrictions=tags)

    def _tags(self, cmd: Command) -> AnalyzeTags:
        state = self.engine.state
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
        self.engine.state.set_passes(0)
        move = self._genmove(color, nopass=True)
        if self._may_ponder():
            self.engine.after_reply(self.ponder)
        return gtp_vertex(move)

    def analyze(self, cmd: Command) -> str | None:
        tags = self._tags(cmd)
        self.search  # noqa: B018  (raises "no network loaded" before the reply starts)
        stream = self.engine.stream_reply(cmd)
        state = self.engine.state
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
        search = getattr(self.engine, "search", None)
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
        search = getattr(self.engine, "search", None)
        params = search.params if search is not None else None
        if name == "maximum memory use (mib)":
            mib = _leading_int(value)
            if not 128 <= mib <= 131072:
                raise GtpError("incorrect value")
            return self._set_memory(mib * MIB, self.cache_pct)
        if name == "percentage of memory for cache":
            pct = _leading_int(value)
            if not 1 <= pct <= 99:
                raise GtpError("incorrect value")
            return self._set_memory(self.max_memory_bytes, pct)
        if name == "visits":
            self._replace(max_visits=_leading_int(value) or UNLIMITED)
            return ""
        if name == "playouts":
            n = _leading_int(value)
            if n and params is not None and params.ponder:
                raise GtpError("incorrect value")
            self._replace(max_playouts=n or UNLIMITED)
            return ""
        if name == "lagbuffer":
            self._replace(lagbuffer_cs=_leading_int(value))
            return ""
        if name == "resign percentage":
            self._replace(resign_pct=_leading_int(value))
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
        search = getattr(self.engine, "search", None)
        if search is not None:
            search.params = dataclasses.replace(search.params, **changes)

    def _base_memory(self) -> int:
        network = getattr(self.engine, "network", None)
        for name in ("weights_bytes", "memory_bytes"):
            value = getattr(network, name, None)
            if value is not None:
                return int(value() if callable(value) else value) + BASE_OVERHEAD_BYTES
        return BASE_OVERHEAD_BYTES

    def _set_memory(self, total: int, pct: int) -> str:
        """LZ's set_max_memory: split what the network leaves of `total` bytes between cache
        and tree; returns the `Setting max tree size ...` line."""
        base = self._base_memory()
        if total < base:
            raise GtpError(f"Not enough memory for network. {base // MIB} MiB required.")
        usable = total - base
        cache = usable * pct // 100
        entries = cache * 10 // 11 // CACHE_ENTRY_BYTES
        if entries < 6000:
            raise GtpError("Not enough memory for cache.")
        tree = usable - cache
        if tree < 100 * MIB:
            raise GtpError("Not enough memory for search tree.")
        self.max_memory_bytes, self.cache_pct = total, pct
        self._replace(max_tree_bytes=tree * 10 // 11)
        network = getattr(self.engine, "network", None)
        resize = getattr(network, "set_cache_size", None)
        if callable(resize):
            resize(entries)
        return f"Setting max tree size to {tree // MIB} MiB and cache size to {cache // MIB} MiB."


def register(engine) -> SearchCommands:
    """Add the search commands; create engine.search from engine.network if not set."""
    group = SearchCommands(engine)
    if getattr(engine, "search", None) is None:
        cfg = engine.config
        engine.search = UCTSearch(getattr(engine, "network", None), params_from_config(cfg),
                                  rng=getattr(cfg, "seed", None), log=engine.diag)
    if getattr(engine, "network", None) is not None:
        # As LZ at start-up: the default budget sets the tree limit and the cache size. The
        # line is a start-up line, which --benchmark keeps quiet (LZ loads with cfg_quiet).
        try:
            line = group._set_memory(group.max_memory_bytes, group.cache_pct)
        except GtpError as exc:  # a network too big for 5.2 GB: keep the defaults
            line = str(exc)
        if not getattr(engine.config, "benchmark", False):
            engine.diag(line + "\n")
    for event in ("clear_board", "boardsize", "loadsgf"):
        engine.subscribe(event, lambda: engine.search.reset())
    engine.ponder = group.ponder_if_allowed
    engine.choose_handicap_stone = group.choose_handicap_stone
    engine.add_command("genmove", group.genmove)
    engine.add_command("kgs-genmove_cleanup", group.genmove_cleanup)
    engine.add_command("lz-analyze", group.analyze)
    engine.add_command("lz-genmove_analyze", group.genmove_analyze)
    engine.add_command("lz-setoption", group.setoption)
    engine.add_command("gomill-explain_last_move", group.explain_last_move)
    return group
