"""Self-play and gating: autogtp's job and the server's SPRT, many games per process.

Owns: the library entry points `play_selfplay` (selfplay.py) and `play_match`
(network_match.py), with their summaries; the SPRT (sprt.py), the resign analysis (resign.py)
and the throughput benchmark (bench.py). Imports: anything below the command line (game, nn,
search, training, gtp's EngineConfig -> SearchParams mapping); the `leelaz selfplay` verb sits
above it.
"""

from leelaz.selfplay.network_match import MatchResult, play_match
from leelaz.selfplay.runner import SelfplayError
from leelaz.selfplay.selfplay import SelfplaySummary, play_selfplay

__all__ = ["MatchResult", "SelfplayError", "SelfplaySummary", "play_match", "play_selfplay"]
