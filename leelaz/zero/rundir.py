"""The run folder of `leelaz zero DIR`: its layout, and the rules that make a kill harmless.

    DIR/run.json                 fixed at creation: network size, starting network, seed
    DIR/best                     sha256 of the current best network (one line; not a symlink)
    DIR/networks/<sha256>.gz     every network of the run, named by the sha256 of its
                                 uncompressed text (Leela Zero's network id)
    DIR/generations/0001.json    one record per generation, rewritten after each phase
    DIR/selfplay/g0001-<net12>/j00/  a generation's self-play games (chunk + SGF per game),
                                 one folder per job so a retried job resumes its own games
    DIR/train/g0001/             the trainer's folder: window.txt (the chunks it trains on),
                                 its checkpoint, the weights it exports
    DIR/matches/g0001-<cand12>-<best12>/  the gating match (SGFs, result.json)
    DIR/log.txt                  what happened, one timestamped line per event
    DIR/lock                     held (flock) while a loop runs, so two loops never share DIR
    DIR/settings.json            the options given on the command line, reused by a bare rerun

Every file is written to a temporary name and renamed into place, so a reader sees it whole or
not at all; run.json is written last at creation, so a folder without it is not yet a run. A
folder without run.json that holds a run's state (`best`, networks/, generations/, games) is
refused, never created over: run.json was lost (an interrupted copy, a deletion), and a new
start would overwrite `best` and train on the old run's games. Only a creation that was
itself interrupted (its `.creating` mark is still there) is started again.

Records are checked (leelaz.zero.records) before the loop uses them, so a damaged or foreign
folder stops with one line saying which file and how to recover, and nothing a record names
leads outside DIR.
State that matters for resuming lives in the generation records and `best`; everything else
is derived from the files (games from their SGFs, the trainer from its checkpoint).

Imports: leelaz.files, leelaz.zero.records, leelaz.backends.weights (the size of a network
file); stdlib.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from leelaz.files import write_gzip_atomic, write_text_atomic
from leelaz.zero.records import RecordError, check_generation, check_network_id, inside

#: The names a run folder may hold; a folder with anything else is not one of ours.
LAYOUT = ("run.json", "best", "networks", "generations", "selfplay", "train", "matches",
          "log.txt", "lock", "status.png", "settings.json")
#: The names that hold a run's state: without run.json, a folder holding any of them is a run
#: that lost its run.json, not a new one.
STATE = ("best", "networks", "generations", "selfplay", "train", "matches")
#: Present while a run is being created (removed once run.json is written).
CREATING = ".creating"
FORMAT = 1


class RunError(Exception):
    """A problem the user must fix, told in one line (exit status 1, nothing in DIR changed)."""


@dataclass(frozen=True)
class RunInfo:
    """run.json: what a run is, fixed when it is created."""

    blocks: int
    filters: int
    start: str  # sha256 of the starting network
    seed: int
    created: str

    @property
    def size(self) -> str:
        return f"{self.blocks}x{self.filters}"


def network_text(path: str) -> bytes:
    """A weights file's text, gunzipped if needed (RunError naming the file if unreadable)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    except (OSError, EOFError) as exc:
        raise RunError(f"cannot read network {path}: {getattr(exc, 'strerror', None) or exc}")


def network_id(text: bytes) -> str:
    """Leela Zero's network id: the sha256 of the uncompressed weights text."""
    return hashlib.sha256(text).hexdigest()


def network_size(path: str) -> tuple[int, int]:
    """(blocks, filters) of a weights file; RunError if it is not a valid network."""
    from leelaz.backends.weights import WeightsError, load_weights

    try:
        weights = load_weights(path)
    except (WeightsError, OSError) as exc:
        raise RunError(f"bad network: {exc}") from None
    return weights.blocks, weights.filters


class RunDir:
    """One run folder. Paths are properties; writers are atomic; readers tolerate absence."""

    def __init__(self, path: str | os.PathLike):
        self.root = Path(path)
        self._lock_fd: int | None = None

    # ---- layout ---------------------------------------------------------------------------
    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def networks(self) -> Path:
        return self.root / "networks"

    def network_path(self, sha: str) -> Path:
        return self.networks / f"{sha}.gz"

    def generation_path(self, gen: int) -> Path:
        return self.root / "generations" / f"{gen:04d}.json"

    def selfplay_dir(self, gen: int, net: str) -> Path:
        return self.root / "selfplay" / f"g{gen:04d}-{net[:12]}"

    def train_dir(self, gen: int) -> Path:
        return self.root / "train" / f"g{gen:04d}"

    def match_dir(self, gen: int, candidate: str, best: str) -> Path:
        return self.root / "matches" / f"g{gen:04d}-{candidate[:12]}-{best[:12]}"

    def exists(self) -> bool:
        return self.run_json.is_file()

    # ---- creating and opening -------------------------------------------------------------
    def check_usable(self) -> None:
        """RunError unless DIR can be created and written, and holds nothing but a run."""
        if self.root.exists() and not self.root.is_dir():
            raise RunError(f"{self.root} exists and is not a folder")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-probe.{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise RunError(f"cannot write to {self.root}: {exc.strerror or exc}") from None
        if self.exists():
            self.check_links()
            return
        names = sorted(p.name for p in self.root.iterdir())
        strangers = [n for n in names if n not in LAYOUT and not n.startswith(".")]
        if strangers:
            raise RunError(f"{self.root} is not a leelaz zero run folder (it holds "
                           f"{strangers[0]!r}); give an empty or new folder")
        state = [n for n in STATE if n in names and not self._empty_folder(self.root / n)]
        if state and CREATING not in names:
            shown = ", ".join(n + ("/" if (self.root / n).is_dir() else "") for n in state)
            raise RunError(f"{self.root} holds a run ({shown}) but no run.json; restore "
                           "run.json (copy the whole folder again), or give a new folder")

    def check_links(self) -> None:
        """RunError if a name the loop writes through (the layout's, a generation record)
        is a symbolic link that leads outside DIR: atomic writes go through links, so a
        received folder whose `best` linked to ~/.bashrc would have it replaced."""
        paths = [self.root / name for name in LAYOUT]
        folder = self.root / "generations"
        if folder.is_dir() and not folder.is_symlink():
            paths += sorted(folder.iterdir())
        real_root = os.path.realpath(self.root)
        for path in paths:
            if path.is_symlink() and os.path.commonpath(
                    [real_root, os.path.realpath(path)]) != real_root:
                raise RunError(f"{path} is a symbolic link that leads outside {self.root}; "
                               "replace it with the file or folder itself")

    @staticmethod
    def _empty_folder(path: Path) -> bool:
        return path.is_dir() and not path.is_symlink() and not any(path.iterdir())

    def create(self, start_net: str, blocks: int, filters: int, seed: int) -> RunInfo:
        """Make a new run starting from the network file `start_net`; run.json comes last,
        and the `.creating` mark, first and removed last, says an unfinished folder is ours."""
        mark = self.root / CREATING
        mark.touch()
        sha = self.add_network(start_net)
        self.set_best(sha)
        info = RunInfo(blocks=blocks, filters=filters, start=sha, seed=seed,
                       created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        write_text_atomic(self.run_json, json.dumps({"format": FORMAT, **info.__dict__},
                                                    indent=1) + "\n")
        mark.unlink()
        return info

    def info(self) -> RunInfo:
        try:
            raw = json.loads(self.run_json.read_text())
            if not isinstance(raw, dict):
                raise RecordError(f"it holds a {type(raw).__name__}, not the run's settings")
            numbers = {}
            for key in ("blocks", "filters", "seed"):
                value = raw[key]
                if not isinstance(value, int) or isinstance(value, bool) or value < \
                        (0 if key == "seed" else 1):
                    raise RecordError(f"{key} is {value!r:.40}")
                numbers[key] = value
            return RunInfo(start=check_network_id(raw["start"], "start"),
                           created=str(raw.get("created", "")), **numbers)
        except FileNotFoundError:
            raise RunError(f"{self.root} is not a leelaz zero run (no run.json)") from None
        except KeyError as exc:
            raise RunError(f"{self.run_json} is damaged (it has no {exc}); restore it from a "
                           "copy of the run") from None
        except (OSError, ValueError, TypeError) as exc:
            raise RunError(f"{self.run_json} is damaged ({exc}); restore it from a copy of "
                           "the run") from None

    def lock(self) -> None:
        """Hold DIR/lock for the life of this process (the kernel drops it on any exit)."""
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunError(f"another leelaz zero is running in {self.root}") from None
        self._lock_fd = fd

    def remove_temporaries(self) -> int:
        """Delete the temporary files (`.NAME.XXXX.tmp`) of writers killed mid-write.

        Only under the lock: no live writer of this run can own one then, except workers of
        an earlier loop that are still dying, whose renames would land whole anyway.
        """
        removed = 0
        for path in self.root.rglob(".*.tmp"):
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
        return removed

    # ---- networks and best ----------------------------------------------------------------
    def add_network(self, path: str | os.PathLike) -> str:
        """Copy a weights file into networks/ under its id (once) and return the id."""
        text = network_text(os.fspath(path))
        sha = network_id(text)
        target = self.network_path(sha)
        if not target.is_file():
            self.networks.mkdir(parents=True, exist_ok=True)
            write_gzip_atomic(target, text)
        return sha

    def best_id(self) -> str:
        """The id in `best`, unchecked (the status table of a folder copied without its
        networks still reads it)."""
        try:
            return (self.root / "best").read_text(encoding="ascii").strip()
        except OSError as exc:
            raise RunError(f"{self.root / 'best'} is missing or unreadable: "
                           f"{exc.strerror or exc}; {self._best_hint()}") from None
        except ValueError:
            return "(not text)"

    def _best_hint(self) -> str:
        return ("`leelaz zero DIR --repair` writes the network the generation records "
                "say is best")

    def best(self) -> str:
        """The best network's id, checked to be a network id in networks/."""
        sha = self.best_id()
        try:
            check_network_id(sha, "it")
        except RecordError as exc:
            raise RunError(f"{self.root / 'best'} is damaged ({exc}); "
                           f"{self._best_hint()}") from None
        if not self.network_path(sha).is_file():
            raise RunError(f"best network {sha[:12]} is missing from {self.networks}")
        return sha

    def set_best(self, sha: str) -> None:
        write_text_atomic(self.root / "best", sha + "\n")

    # ---- generation records ---------------------------------------------------------------
    def generation(self, gen: int) -> dict | None:
        """Generation `gen`'s record, checked (records.check_generation); None if absent."""
        path = self.generation_path(gen)
        try:
            return check_generation(json.loads(path.read_text()), gen, self.root)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # RecordError, JSON and UTF-8 errors
            raise RunError(f"{path} is damaged ({exc}); `leelaz zero DIR --repair` sets it "
                           f"aside and plays generation {gen} again") from None

    def inside(self, path: Path, what: str) -> Path:
        """`path` (under DIR), checked to resolve inside DIR: a folder received from
        someone else may hold symbolic links."""
        try:
            return inside(self.root, str(path.relative_to(self.root)), what)
        except (RecordError, ValueError) as exc:
            raise RunError(f"{self.root}: {exc}") from None

    def save_generation(self, record: dict) -> None:
        path = self.generation_path(record["gen"])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")

    def generations(self) -> list[dict]:
        """Every generation record, oldest first."""
        folder = self.root / "generations"
        numbers = sorted(int(p.stem) for p in folder.glob("[0-9][0-9][0-9][0-9].json")) \
            if folder.is_dir() else []
        return [r for r in (self.generation(n) for n in numbers) if r is not None]

    def repair(self) -> list[str]:
        """Set damaged generation records aside (NNNN.json -> NNNN.json.damaged: the loop
        plays those generations again, their finished games kept) and rewrite a damaged
        `best` from the records; what was done, one line each."""
        done: list[str] = []
        folder = self.root / "generations"
        numbers = sorted(int(p.stem) for p in folder.glob("[0-9][0-9][0-9][0-9].json")) \
            if folder.is_dir() else []
        good = []
        for n in numbers:
            try:
                record = self.generation(n)
            except RunError:
                path = self.generation_path(n)
                os.replace(path, path.with_name(path.name + ".damaged"))
                done.append(f"set aside {path} (damaged) as {path.name}.damaged")
                continue
            if record is not None:
                good.append(record)
        try:
            self.best()
        except RunError:
            sha = self.info().start
            for record in good:
                if record.get("done"):
                    sha = record["train"]["candidate"] if record.get("promoted") else \
                        record["best"]
                else:
                    sha = record["best"]
            if not self.network_path(sha).is_file():
                raise RunError(f"cannot repair {self.root / 'best'}: network {sha[:12]} "
                               f"is missing from {self.networks}") from None
            self.set_best(sha)
            done.append(f"wrote {self.root / 'best'}: {sha}")
        return done

    # ---- log ------------------------------------------------------------------------------
    def log(self, line: str) -> None:
        """Append one timestamped line to log.txt (appends of one short line are atomic)."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(self.root / "log.txt", "a", encoding="utf-8") as f:
            f.write(f"{stamp} {line}\n")


# ---- games --------------------------------------------------------------------------------
def is_training_chunk(name: str) -> bool:
    return name.endswith(".gz") and not name.endswith(".sgf.gz") and ".debug." not in name


def finished_games(folder: str | os.PathLike) -> list[tuple[Path, list[Path]]]:
    """[(sgf, its chunks)] of the finished games under `folder`, sorted by name.

    A self-play game is finished when its SGF exists: the chunk is renamed into place first
    and the SGF last, so a game killed between the two leaves a chunk without an SGF, which
    is not a game (it is neither counted nor trained on). A chunk belongs to the SGF whose
    name has the same stem (the part before the first dot); `NAME.debug.txt.0.gz` (the
    resign analysis's file) is not a training chunk.
    """
    root = Path(folder)
    if not root.is_dir():
        return []
    chunks: dict[tuple[Path, str], list[Path]] = {}
    sgfs: list[Path] = []
    for path in root.rglob("*"):
        name = path.name
        if name.startswith(".") or not path.is_file():
            continue
        if name.endswith(".sgf"):
            sgfs.append(path)
        elif is_training_chunk(name):
            chunks.setdefault((path.parent, name.split(".")[0]), []).append(path)
    return [(sgf, sorted(chunks.get((sgf.parent, sgf.name.split(".")[0]), [])))
            for sgf in sorted(sgfs)]
