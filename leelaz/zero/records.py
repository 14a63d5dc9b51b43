"""Checking what a run folder's records say before the loop acts on it.

A run folder may come from elsewhere (a copy, a colleague's run, a damaged disk), and the loop
reads and writes paths named by its records: `best` names a network file, a generation's
`selfplay.dir` and `gate.dir` name folders the loop plays into and sweeps. So every record is
checked before use, and a damaged one stops the run with one line naming the file and how to
get out, instead of a traceback or, worse, work done outside DIR:

- a network id (`best`, `start`, `train.candidate`) is 64 lowercase hex digits, as the
  sha256 names of networks/ are, so it can never be a path such as `../../..`;
- a folder named by a record is relative, has no `..`, and resolves (symbolic links
  followed) to a place inside DIR;
- every field the loop reads has the type the loop wrote, and a phase marked done holds
  what that phase recorded.

Unknown keys are left alone (a newer leelaz may add some). Imports: stdlib only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

_SHA = re.compile(r"[0-9a-f]{64}")


class RecordError(ValueError):
    """A record does not have the shape the loop wrote; the message says what is wrong."""


def is_network_id(value) -> bool:
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def check_network_id(value, what: str) -> str:
    if not is_network_id(value):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise RecordError(f"{what} is {shown}, not a network id (64 hex digits)")
    return value


def inside(root: Path, relative, what: str) -> Path:
    """root / relative, checked to stay inside root (RecordError otherwise)."""
    if not isinstance(relative, str) or not relative:
        raise RecordError(f"{what} is {relative!r}, not a folder name")
    pure = PurePosixPath(relative)
    if pure.is_absolute() or os.path.isabs(relative) or ".." in pure.parts:
        raise RecordError(f"{what} {relative!r} points outside the run folder")
    path = root / relative
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise RecordError(f"{what} {relative!r} leads outside the run folder "
                          "(a symbolic link)")
    return path


# Types of the fields the loop reads: name -> accepted Python types (bool is not an int here).
_INT, _NUM, _BOOL, _STR = (int,), (int, float), (bool,), (str,)
_FIELDS = {
    None: {"gen": _INT, "done": _BOOL, "promoted": _BOOL, "selfplay": (dict,),
           "train": (dict,), "gate": (dict,)},
    "selfplay": {"visits": _INT, "seconds": _NUM, "played": _INT, "games": _INT,
                 "done": _BOOL, "dumbpass": _BOOL, "noise": _BOOL, "jobs": (list,),
                 "backends": (list,)},
    "train": {"steps": _INT, "batch": _INT, "window_games": _INT, "window_chunks": _INT,
              "seconds": _NUM, "steps_done": _INT, "done": _BOOL},
    "gate": {"gated": _BOOL, "max_games": _INT, "visits": _INT, "seconds": _NUM,
             "dumbpass": _BOOL, "shards": _INT, "wins": _INT, "losses": _INT, "draws": _INT,
             "games": _INT, "played": _INT, "llr": _NUM, "done": _BOOL},
}
#: Keys a phase's record must hold once it holds the key on the left (what the loop wrote
#: with it).
_REQUIRED = {
    "selfplay": {"jobs": ("dir", "visits", "seconds", "played"), "done": ("games",)},
    "train": {"done": ("candidate", "steps_done")},
    "gate": {"gated": ("dir", "max_games", "visits", "seconds"), "done": ("gated",)},
}


def _check_types(part: dict, fields: dict, where: str) -> None:
    for name, types in fields.items():
        if name not in part:
            continue
        value = part[name]
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            raise RecordError(f"{where}{name} is {value!r:.40}, not "
                              f"{'/'.join(t.__name__ for t in types)}")


def check_generation(record, gen: int, root: Path) -> dict:
    """The record of generation `gen` if it has the loop's shape; RecordError otherwise."""
    if not isinstance(record, dict):
        raise RecordError(f"it holds a {type(record).__name__}, not a generation record")
    for key in ("gen", "best"):
        if key not in record:
            raise RecordError(f"it has no {key!r}")
    _check_types(record, _FIELDS[None], "")
    if record["gen"] != gen:
        raise RecordError(f"it says generation {record['gen']!r}, not {gen}")
    check_network_id(record["best"], "best")
    for phase in ("selfplay", "train", "gate"):
        part = record.get(phase)
        if part is None:
            continue
        _check_types(part, _FIELDS[phase], f"{phase}.")
        for marker, needed in _REQUIRED[phase].items():
            if part.get(marker) is not None and part.get(marker) is not False:
                missing = [k for k in needed if k not in part]
                if missing:
                    raise RecordError(f"{phase} has {marker!r} but no {missing[0]!r}")
        if "dir" in part:
            inside(root, part["dir"], f"{phase}.dir")
    sp, tr, gate = record.get("selfplay", {}), record.get("train", {}), record.get("gate", {})
    if "jobs" in sp and not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                for n in sp["jobs"]):
        raise RecordError(f"selfplay.jobs is {sp['jobs']!r:.40}, not a list of game counts")
    if "candidate" in tr:
        check_network_id(tr["candidate"], "train.candidate")
    if gate and not tr.get("done"):
        raise RecordError("it has a gate but no finished training")
    if gate.get("done") and gate.get("gated"):
        for key in ("wins", "losses", "games", "llr"):
            if key not in gate:
                raise RecordError(f"gate is done but has no {key!r}")
        if gate.get("decision") not in (None, "H0", "H1"):
            raise RecordError(f"gate.decision is {gate['decision']!r:.40}, not H0, H1 or null")
    if record.get("done") and not (gate.get("done") and tr.get("done")):
        raise RecordError("it is done but its training or gating is not")
    return record
