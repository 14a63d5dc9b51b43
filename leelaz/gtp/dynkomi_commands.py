"""GTP for dynamic komi: `dyn_komi_test [sym]`, the start-up test, and the game's network komi
(docs/dynamic-komi.md §2.2, §5).

Owns: `register(engine)`, the `dyn_komi_test` handler, the start-up test that sets --pos/--neg,
and keeping `engine.state`'s network komi and scoring right across clear_board, boardsize and
loadsgf. Imports: gtp.protocol, nn.komi_curve, search.dynkomi_search, game.coords.

With none of the fork's flags nothing changes: the state keeps Leela Zero's standard planes,
the search gets no DynamicKomi, and `dyn_komi_test` (which still works) is not listed.

Fixes over the fork (§5, §9): `dyn_komi_test` replies `= <code>` (the fork sends nothing and
the client reads `? unknown command`), a bad argument is `? syntax not understood`, the curve
is Black's; clear_board resets the komi at both turns to the target komi; flags the user gave
win over the start-up test; an "unusable" verdict at start-up is an error (exit 1), not a quiet
exit 0. The start-up test prints only its summary lines, not its 1201-row table.
"""

from __future__ import annotations

from dataclasses import replace

from leelaz.game.state import GameState
from leelaz.gtp.protocol import GtpError
from leelaz.nn.komi_curve import UNUSABLE, USE_NEG, USE_POS, komi_test, network_curve
from leelaz.search.dynkomi_search import DynamicKomi

SUMMARY_LINES = 4  # the rises, the two scores, the verdict


class DynKomiCommands:
    def __init__(self, engine, params):
        self.engine = engine
        self.params = params

    # ---- the game's komi -------------------------------------------------------------------
    def setup_state(self, state, komi: float | None = None) -> None:
        """The network komi at both turns (the target komi, or `komi`), and scoring without
        handicap compensation in the modes."""
        p = self.params
        if not p.komi_in_planes:
            return
        k = p.target_komi if komi is None else komi
        state.set_net_komi(k, k)
        state.score_handicap = not p.enabled

    def _after_loadsgf(self) -> None:
        state = self.engine.state
        self.setup_state(state, state.komi)  # the fork's init_game(KM)

    # ---- dyn_komi_test ---------------------------------------------------------------------
    def dyn_komi_test(self, cmd) -> str:
        if len(cmd.args) > 1:
            raise GtpError("syntax not understood")
        symmetry = 0
        if cmd.args:
            try:
                symmetry = int(cmd.args[0])
            except ValueError:
                raise GtpError("syntax not understood") from None
            if not 0 <= symmetry <= 7:
                raise GtpError("syntax not understood")
        network = getattr(self.engine, "network", None)
        if network is None:
            raise GtpError("no network loaded")
        result = komi_test(network_curve(network, self.engine.state, symmetry))
        self.engine.diag("".join(line + "\n" for line in result.lines()))
        return str(result.code)

    def startup_test(self) -> str | None:
        """In a mode with --tg-auto-pn on and no --pos/--neg given: test the network on the
        empty board at the target komi (symmetry 0) and set --pos/--neg from the verdict.
        Returns an error line for an unusable network, else None."""
        p = self.params
        network = getattr(self.engine, "network", None)
        if not (p.enabled and p.auto_pn) or p.pos_neg_given or network is None:
            return None
        empty = GameState(komi=p.target_komi)
        result = komi_test(network_curve(network, empty, 0))
        self.engine.diag("".join(line + "\n" for line in result.lines()[-SUMMARY_LINES:]))
        if result.code == UNUSABLE:
            return (f"the network is unusable for dynamic komi (dyn_komi_test: negative komi "
                    f"score {result.neg:.6f}, positive {result.pos:.6f}, both above 0.05); "
                    "give --pos or --neg to use it anyway, or --tg-auto-pn to skip the test")
        if result.code == USE_NEG:
            self.params = p.with_(neg=True)
            self.engine.diag("Automatically set --neg.\n")
        elif result.code == USE_POS:
            self.params = p.with_(pos=True)
            self.engine.diag("Automatically set --pos.\n")
        return None


def register(engine) -> DynKomiCommands:
    """Add dyn_komi_test; in a mode, run the start-up test, give the search its DynamicKomi,
    and put the target komi on the game. A start-up problem is left in
    `engine.startup_problem` for the composition root (exit 1)."""
    params = getattr(engine.config, "dyn_komi", None)
    if params is None:
        from leelaz.config import DynKomiParams
        params = DynKomiParams()
    group = DynKomiCommands(engine, params)
    engine.add_command("dyn_komi_test", group.dyn_komi_test, hidden=not params.komi_in_planes)
    problem = group.startup_test()
    if problem is not None:
        engine.startup_problem = problem
        return group
    if params.komi_in_planes:
        engine.state.komi = params.target_komi
        group.setup_state(engine.state)
        for event in ("clear_board", "boardsize"):
            engine.subscribe(event, lambda: group.setup_state(engine.state))
        engine.subscribe("loadsgf", group._after_loadsgf)
    search = getattr(engine, "search", None)
    if group.params.enabled and search is not None:
        search.dynamic_komi = DynamicKomi(group.params, engine.diag)
    if group.params.dyn_fpu and search is not None:
        search.params = replace(search.params, dynamic_fpu=True)
    if group.params.fixed_symmetry >= 0 and search is not None:
        search.params = replace(search.params, fixed_symmetry=group.params.fixed_symmetry)
    return group
