"""The gate's rule: which candidates of the Zero loop become the network that plays self-play.

Owns: `GateRule` (parsed from `--gate RULE`), how long its match is, whether it reads the
games as a sequential test, and its decision on a match's score. Imports: leelaz.selfplay.sprt
(Leela Zero's SPRT is not written twice).

Three rules, as the anchors gated:
- `lz`: Leela Zero's server (leela-zero-server `classes/utilities.js`, in
  leelaz/selfplay/sprt.py): SPRT with Elo bounds 0/35, alpha = beta = 0.05, stopped at 400
  games with the 55 % rule. It promotes only a candidate that is clearly stronger, which a
  small run rarely shows: its candidates improve by a few Elo a generation, so an SPRT against
  +35 rejects them and self-play stays on an old network.
- `winrate:P:N`: play N games (colours alternating) and promote if the candidate scores at
  least P of them (wins + draws / 2; a tie at P promotes). KataGo's gatekeeper
  (`cpp/command/gatekeeper.cpp`: `requiredCandidateWinProp`, default 0.5, over
  `numGamesPerGating`, 200 in `cpp/configs/training/gatekeeper1_maxsize9.cfg`, at 150 visits)
  is the model, minigo's `rl_loop` gate at 0.49 its cousin. It guards self-play against a
  clearly worse candidate (50 Elo worse fails about 92 % of the time at 200 games) without
  asking for a gain. As the gatekeeper does, the decision falls as soon as the N games can no
  longer change it.
- `none`: every candidate is promoted without a match (minigo's and KataGo's main practice:
  "often more efficient without" a gate), the old `--no-gate`.

The decision of a rule depends only on the score, so a resumed match decides as the killed
one would have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from leelaz.selfplay import sprt

#: What `--gate` accepts, for the one-line error.
SYNTAX = "lz, winrate:P:N (0 < P <= 1, N >= 1 games) or none"
#: The default for a new run: KataGo's gate (see the module docstring for why).
DEFAULT = "winrate:0.5:200"

H1, H0 = sprt.H1, sprt.H0


class GateError(ValueError):
    """A `--gate` value that is not a rule; the message is one line naming the value."""


@dataclass(frozen=True)
class GateRule:
    kind: str  # "lz", "winrate" or "none"
    threshold: float = 0.0  # winrate: the least score share that promotes
    games: int = 0  # winrate: the match's length

    @property
    def text(self) -> str:
        if self.kind == "winrate":
            return f"winrate:{self.threshold:g}:{self.games}"
        return self.kind

    @property
    def plays_match(self) -> bool:
        return self.kind != "none"

    @property
    def sequential(self) -> bool:
        """Whether the match stops as soon as the rule decides (the SPRT does)."""
        return self.kind == "lz"

    def match_games(self, lz_cap: int) -> int:
        """The match's most games: the rule's N, or for `lz` the cap given (the server's
        400 by default, `--match-games`)."""
        return self.games if self.kind == "winrate" else lz_cap

    def describe(self) -> str:
        if self.kind == "lz":
            return "SPRT gating (Elo 0/35)"
        if self.kind == "winrate":
            return f"gating at >= {100 * self.threshold:g}% of {self.games} games"
        return "no gating"

    def decide(self, wins: float, losses: float, draws: float = 0.0) -> str | None:
        """H1 (promote), H0 (keep the best) or None (go on playing) for a candidate's score.

        `none` promotes without games; `lz` is the server's SPRT on wins and losses, read
        game by game; `winrate` needs a score of P * N over its N games (draws count half):
        H1 once the score reaches it, H0 once the games left cannot, else None. Past N games
        (a match played longer) the share of all games played decides."""
        if self.kind == "none":
            return H1
        if self.kind == "lz":
            return sprt.decide(int(wins), int(losses))
        played = wins + losses + draws
        score = wins + draws / 2
        if played >= self.games:
            return H1 if score >= self.threshold * played - 1e-9 else H0
        needed = self.threshold * self.games - 1e-9
        if score >= needed:
            return H1
        if score + (self.games - played) < needed:
            return H0
        return None


def parse(text: str | None) -> GateRule:
    """`--gate RULE` -> GateRule; GateError (one line) for anything else."""
    value = (text or "").strip().lower()
    if value in ("lz", "none"):
        return GateRule(value)
    match = re.fullmatch(r"winrate:([0-9]*\.?[0-9]+):([0-9]+)", value)
    if match:
        threshold, games = float(match.group(1)), int(match.group(2))
        if 0.0 < threshold <= 1.0 and games >= 1:
            return GateRule("winrate", threshold, games)
    raise GateError(f"--gate {text!r}: give {SYNTAX}")
