"""The fixed ladder of a Zero run: every promoted network against fixed references, one Elo scale.

Gating against the previous best says only "not worse than last time"; a run that drifts can
pass every gate. The ladder measures every promoted network against opponents that never
change, at fixed visits, without root noise, colours alternating, N games a pair:

- the run's start network and frozen snapshots: the promoted networks number K, 2K, ... in
  the order they were promoted (once promoted, a network and its number never change);
- GNU Go 3.8 at `--level 1` and `--level 10` (`gnugo --mode gtp --chinese-rules
  --capture-all-dead`: area scoring, and it removes dead stones before it passes, so the
  built-in Tromp-Taylor count of `leelaz match` scores the game as it stands).

Without any randomness the games of a pair are not independent: at fixed visits the same few
games repeat (dev/strength_gpu.sh measured 28 distinct move sequences in 100 games at 200
visits, random symmetries notwithstanding), and an Elo interval over copies of a game is too
narrow. So the networks play their first M moves (`--ladder-random-moves`, default 10) in
proportion to their visits, Leela Zero's `-m` (`--randomcnt`), as that script's matches do;
every later move is the search's best.

A network plays the start, every snapshot promoted before it and the GNU Go levels. Games
between two networks are played by `leelaz.selfplay.play_match` (the gating match's batched
runner, its settings but no SPRT), `--ladder-jobs` pairs at once in worker processes (one
process's games are bound by its Python thread, not by the device); games against GNU Go by
`leelaz.tools.match_games` (GTP; our side is `leelaz -g --noponder -v V -r 5`), that many
tables at once.

Files, all under DIR/ladder/ (each written whole or not at all, by rename):
    v800-m10/<net12>-<ref12>/   a pair of networks (at 800 visits, 10 random moves): play_match's folder (match.json, one SGF
                                per game index, result.json); a resumed pair plays only the
                                indices that have no SGF, so a kill loses only games in flight
    v800-m10/<net12>-gnugo-l10/ a pair with GNU Go: game-NNN.sgf per game number (colours
                                follow the number, as `leelaz match` does), same rule
    elo.json                    the last fit (rewritten after every pair)
    sharpness/g0001.json        a generation's policy-target figures (computed once)
    logs/                       the GTP engines' stderr

The Elo fit (`fit`) is maximum likelihood Bradley-Terry over all pairs' results at once: a
player i has a strength r_i, and i scores against j with probability 1 / (1 + 10^((r_j -
r_i) / 400)); draws and games without a result count half a win each way. Each pair's results
get one virtual drawn game (BayesElo's prior, Rémi Coulom's `bayeselo`), so a shut-out has a
finite estimate. The anchor, GNU Go level 10, is fixed at 0 (without GNU Go: the start network
is 0); the others are found by Newton's method on the concave log-likelihood. The 95 % interval
is the Wald interval from the likelihood's curvature at the maximum: +-1.96 sqrt of the
diagonal of the inverse observed information (minus the Hessian) of the free strengths, i.e.
each player's uncertainty relative to the anchor.

Imports: leelaz.zero.rundir, leelaz.files, leelaz.selfplay (play_match, the resign analysis,
the self-play settings), leelaz.tools.match_games (GTP games), leelaz.training.records and
chunks (reading chunks); numpy; matplotlib (optional, the plot).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from leelaz.files import write_text_atomic
from leelaz.zero.rundir import RunDir, RunError, finished_games

#: Elo per unit of the natural log-odds scale.
ELO_PER_NAT = 400.0 / math.log(10.0)
#: Virtual drawn games added to each pair (BayesElo's prior).
PRIOR_DRAWS = 1.0
Z95 = 1.959963984540054
GNUGO_LEVELS = (1, 10)
ANCHOR = "gnugo-l10"
#: Self-play resigns at this share unless a generation's record says otherwise (autogtp -r 5).
SELFPLAY_RESIGN = 0.05
#: Games read per generation for the policy-target figures.
SHARPNESS_GAMES = 16
_GAME = re.compile(r"game-(\d+)\.sgf$")


def gnugo_name(level: int) -> str:
    return f"gnugo-l{level}"


def find_gnugo() -> str | None:
    """GNU Go on PATH or in /usr/games (Debian's place), as the tests find it."""
    return shutil.which("gnugo", path="/usr/games:" + os.environ.get("PATH", ""))


# ---- the ladder's players -----------------------------------------------------------------
@dataclass
class Network:
    """A promoted network: its number in promotion order (0 = the start), the generation that
    promoted it, and what the run had spent when it was promoted."""

    index: int
    gen: int
    sha: str
    games: int  # self-play games of the run up to its promotion
    hours: float  # wall hours of self-play, training and gating up to its promotion


def _phase_seconds(record: dict) -> float:
    return sum(float(record.get(phase, {}).get("seconds") or 0.0)
               for phase in ("selfplay", "train", "gate"))


def promoted_networks(run: RunDir) -> list[Network]:
    """The start and every promoted network, in promotion order (a network once)."""
    nets = [Network(0, 0, run.info().start, 0, 0.0)]
    seen = {nets[0].sha}
    games, seconds = 0, 0.0
    for record in run.generations():
        games += int(record.get("selfplay", {}).get("games") or 0)
        seconds += _phase_seconds(record)
        candidate = record.get("train", {}).get("candidate")
        if record.get("done") and record.get("promoted") and candidate and candidate not in seen:
            seen.add(candidate)
            nets.append(Network(len(nets), int(record["gen"]), candidate, games,
                                seconds / 3600.0))
    return nets


def references(nets: list[Network], every: int) -> list[Network]:
    """The start and the frozen snapshots (promotion numbers every, 2 every, ...)."""
    return [n for n in nets if n.index == 0 or (every > 0 and n.index % every == 0)]


def opponents(net: Network, nets: list[Network], every: int, levels) -> list:
    """What `net` plays: the references promoted before it, then the GNU Go levels."""
    return ([r for r in references(nets, every) if r.index < net.index]
            + [gnugo_name(level) for level in levels])


def pair_dir(root: Path, visits: int, random_moves: int, net: Network, opponent) -> Path:
    name = opponent if isinstance(opponent, str) else opponent.sha[:12]
    return root / "ladder" / f"v{visits}-m{random_moves}" / f"{net.sha[:12]}-{name}"


# ---- reading results back -----------------------------------------------------------------
@dataclass
class PairResult:
    player: str  # a network's sha
    opponent: str  # a network's sha or gnugo-lL
    wins: float = 0.0
    losses: float = 0.0
    draws: float = 0.0

    @property
    def games(self) -> float:
        return self.wins + self.losses + self.draws


def network_pair_result(folder: Path) -> tuple[int, int, int]:
    """(A's wins, losses, games without a result) of a play_match folder, A = the ladder's
    network (it has Black in even-numbered games)."""
    from leelaz.selfplay.network_match import tally

    if not folder.is_dir():
        return 0, 0, 0
    wins, losses = tally(str(folder))
    played = len({p.name.split("-")[0] for p in folder.glob("[0-9]*.sgf")})
    return wins, losses, max(0, played - wins - losses)


def gnugo_games(folder: Path) -> dict[int, Path]:
    """Game number (0-based) -> its SGF in a GNU Go pair's folder."""
    out = {}
    if folder.is_dir():
        for path in folder.iterdir():
            found = _GAME.fullmatch(path.name)
            if found:
                out[int(found.group(1)) - 1] = path
    return out


def gnugo_pair_result(folder: Path, name1: str) -> tuple[float, float, float]:
    from leelaz.tools.match_games import read_game

    wins = losses = draws = 0.0
    for path in gnugo_games(folder).values():
        game = read_game(str(path))
        if game.winner is None:
            draws += 1
        elif (game.black if game.winner == "B" else game.white) == name1:
            wins += 1
        else:
            losses += 1
    return wins, losses, draws


def engine_name(net: Network) -> str:
    return f"leelaz-{net.sha[:12]}"


def collect(run: RunDir, visits: int, random_moves: int, every: int,
            levels=GNUGO_LEVELS) -> list[PairResult]:
    """Every pair's results at `visits` and `random_moves` found in the run folder."""
    nets = promoted_networks(run)
    out = []
    for net in nets:
        for opp in opponents(net, nets, every, levels):
            folder = pair_dir(run.root, visits, random_moves, net, opp)
            if isinstance(opp, str):
                w, l, d = gnugo_pair_result(folder, engine_name(net))
                out.append(PairResult(net.sha, opp, w, l, d))
            else:
                w, l, d = network_pair_result(folder)
                out.append(PairResult(net.sha, opp.sha, w, l, d))
    return [r for r in out if r.games > 0]


# ---- the fit -------------------------------------------------------------------------------
@dataclass
class Rating:
    elo: float
    half_width: float  # 95 % interval: elo +- half_width (0 for the anchor)
    games: float


def fit(results: list[PairResult], anchor: str, prior_draws: float = PRIOR_DRAWS,
        ) -> dict[str, Rating]:
    """Maximum likelihood Bradley-Terry Elo of every player connected to `anchor` by games,
    the anchor at 0, with the Wald 95 % interval (see the module docstring). Players not
    connected to the anchor are left out; without the anchor in the results, {}."""
    pairs: dict[tuple[str, str], list[float]] = {}
    for r in results:
        if r.games <= 0 or r.player == r.opponent:
            continue
        a, b = sorted((r.player, r.opponent))
        score = r.wins + r.draws / 2 if a == r.player else r.losses + r.draws / 2
        cell = pairs.setdefault((a, b), [0.0, 0.0])
        cell[0] += score
        cell[1] += r.games
    reached = _connected(pairs, anchor)
    if not reached:
        return {}
    players = [anchor] + sorted(reached - {anchor})
    at = {p: i for i, p in enumerate(players)}
    edges = [(at[a], at[b], s + prior_draws / 2, n + prior_draws)
             for (a, b), (s, n) in pairs.items() if a in at and b in at]
    games = np.zeros(len(players))
    for (a, b), (_s, n) in pairs.items():
        if a in at and b in at:
            games[at[a]] += n
            games[at[b]] += n
    theta = np.zeros(len(players))
    for _ in range(200):
        grad, info = _gradient_information(theta, edges)
        step = np.clip(np.linalg.solve(info[1:, 1:], grad[1:]), -5.0, 5.0)  # damped far out
        theta[1:] += step
        if np.max(np.abs(step)) < 1e-10:
            break
    _grad, info = _gradient_information(theta, edges)
    cov = np.linalg.inv(info[1:, 1:])
    half = np.concatenate([[0.0], Z95 * np.sqrt(np.diag(cov))])
    return {p: Rating(float(ELO_PER_NAT * theta[i]), float(ELO_PER_NAT * half[i]),
                      float(games[i]))
            for p, i in at.items()}


def _gradient_information(theta: np.ndarray, edges) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of the log-likelihood and the observed information (minus its Hessian)."""
    grad = np.zeros_like(theta)
    info = np.zeros((len(theta), len(theta)))
    for i, j, score, games in edges:
        p = 1.0 / (1.0 + math.exp(theta[j] - theta[i]))
        grad[i] += score - games * p
        grad[j] -= score - games * p
        w = games * p * (1.0 - p)
        info[i, i] += w
        info[j, j] += w
        info[i, j] -= w
        info[j, i] -= w
    return grad, info


def _connected(pairs, anchor: str) -> set[str]:
    neighbours: dict[str, set[str]] = {}
    for a, b in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    if anchor not in neighbours:
        return set()
    seen, todo = {anchor}, [anchor]
    while todo:
        for other in neighbours[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


# ---- playing -------------------------------------------------------------------------------
@dataclass
class LadderSettings:
    visits: int = 800
    random_moves: int = 10  # the first moves played in proportion to visits (-m)
    games: int = 40  # per pair
    every: int = 4  # a snapshot every this many promoted networks
    levels: tuple[int, ...] = GNUGO_LEVELS
    gnugo: str | None = None  # GNU Go's command line (None: not found, its rungs skipped)
    parallel: int = 8  # games in flight in a pair of networks (batched)
    jobs: int = 4  # GNU Go games at once (one leelaz GTP engine each)
    max_moves: int | None = None
    cpu_only: bool = False
    gpus: tuple[int, ...] = ()
    network_backend: str = "auto"
    progress: bool = True
    seed: int = 1
    say: object = field(default=print, repr=False)


def _pair_seed(seed: int, net: Network, opponent) -> int:
    name = opponent if isinstance(opponent, str) else opponent.sha
    return int.from_bytes((net.sha[:16] + name).encode()[:8], "big") ^ seed


def play_ladder(run: RunDir, s: LadderSettings) -> dict[str, Rating]:
    """Play every pair's missing games (networks in promotion order), refitting after each
    pair; returns the last fit. Pairs of networks come first, `s.jobs` of them at once (a
    process each: one process's batched games are bound by its one Python thread, not by
    the device), then the pairs with GNU Go, each with `s.jobs` tables."""
    nets = promoted_networks(run)
    levels = s.levels if s.gnugo else ()
    ratings = write_fit(run, s)
    pending = []
    for net in nets:
        for opp in opponents(net, nets, s.every, levels):
            folder = pair_dir(run.root, s.visits, s.random_moves, net, opp)
            if isinstance(opp, str):
                played = len(gnugo_games(folder))
            else:
                played = sum(network_pair_result(folder))
            if played < s.games:
                pending.append((net, opp, folder, played))
    networks = [p for p in pending if not isinstance(p[1], str)]
    for net, opp, folder, played in networks:
        _announce(s, net, opp, played)
    for _ in _play_network_pairs(run, s, [(net, opp, folder) for net, opp, folder, _ in
                                          networks]):
        ratings = write_fit(run, s)
    for net, opp, folder, played in pending:
        if isinstance(opp, str):
            _announce(s, net, opp, played)
            _play_gnugo(run, s, net, int(opp.split("-l")[1]), folder)
            ratings = write_fit(run, s)
    return ratings


def _announce(s: LadderSettings, net: Network, opp, played: int) -> None:
    name = opp if isinstance(opp, str) else f"network #{opp.index} ({opp.sha[:12]})"
    s.say(f"ladder: network #{net.index} ({net.sha[:12]}, generation {net.gen}) vs "
          f"{name}: games {played + 1}-{s.games} at {s.visits} visits")


def _play_network_pairs(run: RunDir, s: LadderSettings, pairs: list):
    """Play the pairs of networks, yielding after each one that finished: in this process
    with one job, else in `s.jobs` worker processes (spawned, so that each gets its own
    device context; each dies with this one, so a killed ladder leaves no writer behind; a
    resumed one replays only the games that have no SGF)."""
    jobs = [_pair_job(run, s, net, ref, folder) for net, ref, folder in pairs]
    if s.jobs <= 1 or len(jobs) <= 1:
        for job in jobs:
            _play_pair(job)
            yield
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from leelaz.selfplay.lifetime import die_with_parent
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(s.jobs, len(jobs)), mp_context=context,
                             initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        waiting = {pool.submit(_play_pair, job) for job in jobs}
        try:
            while waiting:
                done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()  # a pair's error stops the ladder, as in one process
                    yield
        finally:
            for future in waiting:
                future.cancel()


def _pair_job(run: RunDir, s: LadderSettings, net: Network, ref: Network,
              folder: Path) -> dict:
    """What one pair's play_match needs, as plain values (sent to a worker process)."""
    options = {"network_backend": s.network_backend, "randomcnt": s.random_moves}
    if s.max_moves:
        options["max_moves"] = s.max_moves
    return dict(weights_a=str(run.network_path(net.sha)),
                weights_b=str(run.network_path(ref.sha)), out=str(folder), max_games=s.games,
                sprt=False, visits=s.visits, parallel=s.parallel,
                seed=_pair_seed(s.seed, net, ref) % 2**63, cpu_only=s.cpu_only,
                gpus=tuple(s.gpus), progress=False, **options)


def _play_pair(job: dict) -> None:
    from leelaz.selfplay import SelfplayError, play_match

    job = dict(job)
    try:
        play_match(job.pop("weights_a"), job.pop("weights_b"), job.pop("out"), **job)
    except SelfplayError as exc:
        raise RunError(f"ladder: {exc}") from None


def leelaz_command(run: RunDir, s: LadderSettings, net: Network, seed: int) -> list[str]:
    """Our side against GNU Go: the GTP engine at fixed visits, no noise, its first moves
    drawn as in the games between networks."""
    argv = [sys.executable, "-m", "leelaz", "-g", "--noponder", "-w",
            str(run.network_path(net.sha)), "-v", str(s.visits), "-m", str(s.random_moves),
            "-r", "5", "-s", str(seed),
            "--backend", s.network_backend]
    if s.cpu_only:
        argv.append("--cpu-only")
    for gpu in s.gpus:
        argv += ["--gpu", str(gpu)]
    return argv


def _play_gnugo(run: RunDir, s: LadderSettings, net: Network, level: int,
                folder: Path) -> None:
    from leelaz.tools.match_games import MatchSettings, MatchTable, sgf_text

    folder.mkdir(parents=True, exist_ok=True)
    done = gnugo_games(folder)
    todo = [i for i in range(s.games) if i not in done]
    jobs = max(1, min(s.jobs, len(todo)))
    base = _pair_seed(s.seed, net, gnugo_name(level)) % 2**32
    lock = threading.Lock()
    errors: list[str] = []
    gnugo = f"{s.gnugo} --mode gtp --level {level} --chinese-rules --capture-all-dead"

    def worker(table_number: int) -> None:
        settings = MatchSettings(
            engine1=shlex.join(leelaz_command(run, s, net, base + table_number)),
            engine2=gnugo, name1=engine_name(net), name2=gnugo_name(level),
            games=s.games, komi=7.5, max_moves=s.max_moves or 722,
            log_dir=str(run.root / "ladder" / "logs"), timeout=120.0, move_timeout=600.0)
        table = MatchTable(settings, table_number)
        try:
            while True:
                with lock:
                    if not todo or errors:
                        return
                    number = todo.pop(0)
                game = table.play_game(number)
                write_text_atomic(folder / f"game-{number + 1:03d}.sgf", sgf_text(game))
                if s.progress:
                    s.say(f"  game {number + 1}: B {game.black} W {game.white} {game.result}"
                          f" ({len(game.moves)} moves)")
        except Exception as exc:  # noqa: BLE001 (reported below; the other tables stop)
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            table.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)
    if errors:
        raise RunError(f"ladder: a game against {gnugo_name(level)} failed: {errors[0]}")


# ---- the fit's file and what --status shows -------------------------------------------------
def anchor_of(ratings_input: list[PairResult], start: str) -> str:
    return ANCHOR if any(ANCHOR in (r.player, r.opponent) for r in ratings_input) else start


def write_fit(run: RunDir, s: LadderSettings) -> dict[str, Rating]:
    results = collect(run, s.visits, s.random_moves, s.every, s.levels)
    anchor = anchor_of(results, run.info().start)
    ratings = fit(results, anchor)
    data = {"visits": s.visits, "random_moves": s.random_moves, "every": s.every, "games_per_pair": s.games,
            "anchor": anchor, "model": "Bradley-Terry, maximum likelihood, one virtual draw "
                                        "per pair; 95% Wald interval",
            "ratings": {p: {"elo": r.elo, "half_width": r.half_width, "games": r.games}
                        for p, r in ratings.items()},
            "pairs": [{"player": r.player, "opponent": r.opponent, "wins": r.wins,
                       "losses": r.losses, "draws": r.draws} for r in results]}
    path = run.root / "ladder" / "elo.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return ratings


def read_fit(run: RunDir) -> dict | None:
    try:
        data = json.loads((run.root / "ladder" / "elo.json").read_text())
        return data if isinstance(data, dict) and isinstance(data.get("ratings"), dict) \
            else None
    except (OSError, ValueError):
        return None


def ladder_rows(run: RunDir) -> list[dict]:
    """One row per promoted network with its ladder Elo (None if not played yet)."""
    data = read_fit(run)
    if data is None:
        return []
    ratings = data["ratings"]
    rows = []
    for net in promoted_networks(run):
        rating = ratings.get(net.sha)
        rows.append({"index": net.index, "gen": net.gen, "sha": net.sha, "games": net.games,
                     "hours": net.hours,
                     "elo": rating["elo"] if rating else None,
                     "half": rating["half_width"] if rating else None,
                     "ladder_games": rating["games"] if rating else 0,
                     "reference": net.index == 0 or net.index % int(data.get("every", 0) or
                                                                    10**9) == 0})
    return rows


def ladder_lines(run: RunDir) -> list[str]:
    """The ladder's table for `--status` (nothing when the ladder was never played)."""
    data = read_fit(run)
    if data is None:
        return []
    anchor = data.get("anchor", ANCHOR)
    anchor_text = "GNU Go level 10" if anchor == ANCHOR else f"the start {anchor[:12]}"
    lines = ["", f"ladder at {data.get('visits')} visits ({anchor_text} = 0; 95% intervals; "
                 f"snapshot every {data.get('every')} promoted networks; first "
                 f"{data.get('random_moves', 0)} moves drawn by visits):",
             f"{'#':>3}  {'gen':>4}  {'network':12}  {'games':>7}  {'hours':>7}  "
             f"{'ladder':>6}  {'Elo':>6}  {'95%':>5}"]
    for row in ladder_rows(run):
        elo = "-" if row["elo"] is None else f"{row['elo']:+.0f}"
        half = "-" if row["half"] is None else f"±{row['half']:.0f}"
        lines.append(f"{row['index']:>3}  {row['gen']:>4}  {row['sha'][:12]:12}  "
                     f"{row['games']:>7}  {row['hours']:>7.2f}  {row['ladder_games']:>6.0f}  "
                     f"{elo:>6}  {half:>5}" + ("  reference" if row["reference"] else ""))
    for level in GNUGO_LEVELS:
        rating = data["ratings"].get(gnugo_name(level))
        if rating:
            lines.append(f"{'':>3}  {'':>4}  {'GNU Go L' + str(level):12}  {'':>7}  "
                         f"{'':>7}  {rating['games']:>6.0f}  {rating['elo']:>+6.0f}  "
                         f"{'±%.0f' % rating['half_width'] if rating['half_width'] else '':>5}")
    return lines


def plot_ladder(run: RunDir, axes) -> bool:
    """Draw the ladder Elo with its interval against self-play games and hours on two
    matplotlib axes; False when there is nothing to draw."""
    rows = [r for r in ladder_rows(run) if r["elo"] is not None]
    if not rows:
        return False
    data = read_fit(run) or {}
    for ax, key, label in ((axes[0], "games", "self-play games"),
                           (axes[1], "hours", "hours of self-play, training and gating")):
        ax.errorbar([r[key] for r in rows], [r["elo"] for r in rows],
                    yerr=[r["half"] for r in rows], fmt="o-", capsize=3, color="tab:blue",
                    label="promoted networks (95%)")
        for level, colour in zip(GNUGO_LEVELS, ("tab:orange", "tab:red")):
            rating = data.get("ratings", {}).get(gnugo_name(level))
            if rating:
                ax.axhline(rating["elo"], color=colour, ls="--", lw=1,
                           label=f"GNU Go level {level}")
        ax.set_xlabel(label)
        ax.set_ylabel("ladder Elo")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="best", fontsize=8)
    axes[0].set_title(f"ladder at {data.get('visits')} visits")
    return True


# ---- loop health per generation --------------------------------------------------------------
def policy_sharpness(folder: Path, games: int = SHARPNESS_GAMES) -> dict | None:
    """Mean children visited (non-zero entries of the policy target) and mean share of the top
    child over the positions of the first `games` finished games of a self-play folder."""
    from leelaz.training.chunks import read_chunk_text
    from leelaz.training.records import RecordError, parse_records

    children, top, positions = 0.0, 0.0, 0
    for _sgf, chunks in finished_games(folder)[:games]:
        for chunk in chunks:
            try:
                for record in parse_records(read_chunk_text(str(chunk))):
                    p = np.asarray(record.probabilities)
                    children += int(np.count_nonzero(p))
                    top += float(p.max())
                    positions += 1
            except (OSError, ValueError, RecordError, EOFError):
                continue
    if not positions:
        return None
    return {"children": children / positions, "top_share": top / positions,
            "positions": positions}


def resign_false_rate(folder: Path, threshold: float) -> dict | None:
    """The resign analysis (leelaz.selfplay.resign) of a generation's played-out games at the
    self-play threshold: false resignations / analysed games."""
    from leelaz.selfplay.resign import analyse, read_games

    games = []
    for sub in sorted({folder, *(p.parent for p in folder.rglob("*.debug.txt.0.gz"))}):
        if sub.is_dir():
            games += read_games(str(sub))[0]
    if not games:
        return None
    row = analyse(games, (threshold,))[0]
    return {"threshold": threshold, "games": row.games, "wrong": row.wrong,
            "false_rate": row.false_rate}


def generation_health(run: RunDir, record: dict) -> dict:
    """Sharpness and resign figures of a finished self-play phase, cached in DIR/ladder."""
    sp = record.get("selfplay", {})
    if not sp.get("done") or not isinstance(sp.get("dir"), str):
        return {}
    cache = run.root / "ladder" / "sharpness" / f"g{int(record['gen']):04d}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    folder = run.root / sp["dir"]
    resign = float(sp.get("resignpct", SELFPLAY_RESIGN * 100)) / 100.0
    health = {"sharpness": policy_sharpness(folder),
              "resign": resign_false_rate(folder, resign)}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cache, json.dumps(health, sort_keys=True) + "\n")
    except OSError:
        pass  # a read-only copy of a run: computed again next time
    return health


_HELD_OUT = re.compile(r"(^|/)ext_|9d|9-dan|dan|tygem|external|held|holdout|human", re.I)


def held_out_metrics(record: dict) -> dict[str, float]:
    """The held-out 9-dan figures a generation's record may hold (top-1, policy CE, value
    MSE): the trainer's `ext_top1`, `ext_policy_ce`, `ext_value_mse` (the fixed external
    games, `--val-sgf`) under train.metrics, or, tolerantly, keys of such names anywhere in
    the record under a name that says 9-dan, external or held-out; {} when absent."""
    metrics = record.get("train", {}).get("metrics")
    if isinstance(metrics, dict):
        known = {name: metrics[key] for name, key in (("top1", "ext_top1"),
                                                      ("ce", "ext_policy_ce"),
                                                      ("mse", "ext_value_mse"))
                 if isinstance(metrics.get(key), (int, float))}
        if known:
            return {k: float(v) for k, v in known.items()}
    found: dict[str, float] = {}

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}/{key}".lower())
            return
        if not isinstance(node, (int, float)) or isinstance(node, bool) \
                or not _HELD_OUT.search(path):
            return
        leaf = path.rsplit("/", 1)[-1]
        for name, pattern in (("top1", r"top.?1|accuracy"), ("ce", r"(policy.?)?ce$|cross"),
                              ("mse", r"mse")):
            if re.search(pattern, leaf) and name not in found:
                found[name] = float(node)

    walk(record, "")
    return found


def health_lines(run: RunDir) -> list[str]:
    """Per generation: held-out 9-dan figures (if recorded), target sharpness, resign rate."""
    lines = ["", "loop health per generation (policy targets of up to "
                 f"{SHARPNESS_GAMES} games; resign false positives at the self-play threshold):",
             f"{'gen':>4}  {'children':>8}  {'top':>5}  {'resign FP':>13}  held-out 9-dan"]
    any_row = False
    for record in run.generations():
        health = generation_health(run, record)
        held = held_out_metrics(record)
        if not health and not held:
            continue
        any_row = True
        sharp, resign = health.get("sharpness"), health.get("resign")
        children = f"{sharp['children']:.1f}" if sharp else "-"
        top = f"{sharp['top_share']:.2f}" if sharp else "-"
        fp = (f"{100 * resign['false_rate']:.1f}% of {resign['games']}" if resign else "-")
        parts = []
        if "top1" in held:
            top1 = held["top1"] * (100 if held["top1"] <= 1 else 1)
            parts.append(f"top-1 {top1:.1f}%")
        if "ce" in held:
            parts.append(f"CE {held['ce']:.3f}")
        if "mse" in held:
            parts.append(f"MSE {held['mse']:.3f}")
        lines.append(f"{record['gen']:>4}  {children:>8}  {top:>5}  {fp:>13}  "
                     f"{', '.join(parts) or '-'}")
    return lines if any_row else []


# ---- `leelaz zero DIR --ladder` ------------------------------------------------------------
def check_gnugo(command: str | None) -> str | None:
    """The GNU Go command to use: the one given (checked), else the one found, else None."""
    if command is None:
        return find_gnugo()
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise RunError(f"--gnugo {command!r}: {exc}") from None
    if not argv or shutil.which(argv[0]) is None:
        raise RunError(f"--gnugo {command!r}: cannot find the program "
                       f"{argv[0] if argv else ''!r}")
    return command


def parse_levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        levels = ()
    if not levels or any(not 1 <= level <= 10 for level in levels):
        raise RunError(f"--gnugo-levels {text!r}: give GNU Go levels 1..10, e.g. 1,10")
    return levels


def _default_parallel(cpu_only: bool) -> int:
    """Games in flight in a pair of networks: the loop's machine defaults (64 with a GPU)."""
    from leelaz.zero.local_executor import local_gpu_present

    return 64 if not cpu_only and local_gpu_present() else 8


def run_ladder(run: RunDir, opts: dict, say) -> int:
    """`leelaz zero DIR --ladder`: play the missing games, print the ladder. The plot is
    status.py's, which draws the ladder's panels from this module: the verb writes it after
    (tools/zero.py), so that this module does not import status.py back."""
    if not run.exists():
        raise RunError(f"{run.root} is not a leelaz zero run (no run.json)")
    levels = parse_levels(opts.get("gnugo_levels") or "1,10")
    gnugo = check_gnugo(opts.get("gnugo"))
    if gnugo is None:
        say("ladder: GNU Go not found (apt-get install gnugo, or --gnugo COMMAND): its rungs "
            "are skipped")
    run.lock()
    run.remove_temporaries()
    settings = LadderSettings(
        visits=opts.get("ladder_visits") or 800,
        random_moves=10 if opts.get("ladder_random_moves") is None
        else opts["ladder_random_moves"], games=opts.get("ladder_games") or 40,
        every=opts.get("ladder_every") or 4, levels=levels, gnugo=gnugo,
        parallel=opts.get("parallel") or _default_parallel(bool(opts.get("cpu_only"))), jobs=opts.get("ladder_jobs") or 4,
        max_moves=opts.get("max_moves"), cpu_only=bool(opts.get("cpu_only")),
        gpus=tuple(opts.get("gpu") or ()), network_backend=opts.get("backend") or "auto",
        progress=not opts.get("quiet"), seed=run.info().seed, say=say)
    run.log(f"ladder: {settings.games} games a pair at {settings.visits} visits")
    play_ladder(run, settings)
    print("\n".join(ladder_lines(run)[1:]))
    return 0
