"""What the GTP command groups share: one typed object instead of attributes on the engine.

Owns: `Session`. Imports: config, and for type checking only game/nn/search/training.

The composition root (cli.build_engine) fills it and every command group's `register(engine)`
reads and writes it as `engine.session`: the board commands replace `state` (loadsgf,
place_free_handicap: always read `session.state` afresh), the search commands create `search`
from `network` and install the two hooks the board commands call, the training commands own
`recorder`. A field is None until its owner sets it (no network: no search either).
`GtpEngine.state`, `.config`, `.network`, `.search`, `.recorder` and `.weights_path` are the
same fields, read and written through the engine (tests and short scripts use them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from leelaz.config import EngineConfig

if TYPE_CHECKING:
    from leelaz.game.state import GameState
    from leelaz.nn.loading import LoadPlan
    from leelaz.nn.network import Network
    from leelaz.search.search import UCTSearch
    from leelaz.training.recorder import TrainingRecorder


@dataclass
class Session:
    config: EngineConfig
    state: GameState
    #: The network (None when none was loaded: the commands that need one say so).
    network: Network | None = None
    #: The file it came from (printsgf's PB), None without a network.
    weights_path: str | None = None
    #: The LoadPlan (nn/loading.py) the network was opened with: what helper search
    #: processes open their own from (root_parallel/); None: no helpers.
    load_plan: LoadPlan | None = None
    #: Created by the search commands from `network` unless set before they register.
    search: UCTSearch | None = None
    #: The training buffer (dump_training), created by whichever group needs it first.
    recorder: TrainingRecorder | None = None
    #: Think on the opponent's time after `time_left`, when allowed (search commands).
    ponder: Callable[[], None] | None = None
    #: One free-handicap stone beyond the fixed grid (search commands); None: the board
    #: commands' own choice.
    choose_handicap_stone: Callable[[GameState], int] | None = None
