"""The backend choice, remembered per machine, OpenCL drivers and network width.

Owns: `lookup` and `store` of `backend_choice.json` in the user data folder (beside the
tuner's cache: ~/.local/share/leelaz/, or $XDG_DATA_HOME/leelaz/). Imports: files, stdlib.

Why: without --cpu-only and with no GPU, device_choice races an OpenCL CPU device (PoCL)
against NumPy before every start; the race and the OpenCL set-up behind it cost more than a
whole --cpu-only start. Its answer only changes with the machine, the OpenCL drivers and the
network's width (the race times one block of that width) at the search's batch size, so it
is measured once and kept.

The key is computed without importing pyopencl (which, with the platform scan, costs as much
as the rest of a start): the machine is its host name, CPU model and core count; the drivers
are the ICD files the OpenCL loader reads (their names, sizes and times), the environment
variables that steer the loader and PoCL, and the installed pyopencl (which bundles its own
PoCL). An entry whose drivers differ is stale: it is measured again, with a line saying so.
A cache that cannot be read or written (a read-only home, a corrupt file) costs one line on
stderr and a measurement, never a failure.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

from leelaz.files import user_data_dir, write_text_atomic

#: Bump when the race or the backends change enough that old answers should be measured again.
CHOICE_VERSION = 1
#: Environment variables that change which OpenCL devices a process sees.
OPENCL_ENV = ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "OPENCL_VENDOR_PATH", "POCL_DEVICES")


def cache_path() -> Path:
    return user_data_dir() / "backend_choice.json"


def machine_id() -> str:
    """Host name, CPU model and core count: what a copied home folder would not share."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.uname().nodename}/{model}/{os.cpu_count()}"


def drivers_id() -> str:
    """A short hash of what decides the OpenCL devices this process would see."""
    parts = [f"v{CHOICE_VERSION}"]
    parts += [f"{name}={os.environ.get(name, '')}" for name in OPENCL_ENV]
    folders = [os.environ.get("OCL_ICD_VENDORS") or "", "/etc/OpenCL/vendors"]
    for folder in folders:
        try:
            names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        except OSError:
            names = []
        for name in names:
            parts.append(_file_id(os.path.join(folder, name)))
    try:
        spec = importlib.util.find_spec("pyopencl")
    except (ImportError, ValueError):
        spec = None
    parts.append(_file_id(spec.origin) if spec is not None and spec.origin else "no pyopencl")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()[:16]


def _file_id(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _key(width: int, batch: int) -> str:
    return f"{machine_id()}|{width} filters|batch {batch}"


def _read(say) -> dict:
    path = cache_path()
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(entries, dict):
            raise ValueError("not a JSON object")
        return entries
    except FileNotFoundError:
        return {}
    except OSError as e:
        say(f"Cannot read the backend choice cache {path} ({e.strerror or e}); "
            "measuring again.")
    except ValueError as e:
        say(f"The backend choice cache {path} is damaged ({_short(e)}); measuring again.")
    return {}


def lookup(width: int, batch: int, say) -> dict | None:
    """The cached choice for this machine, width and batch, or None (with a line saying why
    when there is a cache entry or file that could not be used)."""
    entry = _read(say).get(_key(width, batch))
    if entry is None:
        return None
    if not isinstance(entry, dict) or entry.get("backend") not in ("numpy", "opencl"):
        say(f"The backend choice cache {cache_path()} has a damaged entry; measuring again.")
        return None
    if entry.get("drivers") != drivers_id():
        say("The OpenCL drivers changed since the backend choice was measured; "
            "measuring again.")
        return None
    return entry


def store(width: int, batch: int, choice: dict, say) -> None:
    """Remember `choice` (a JSON-able dict with "backend"); a failure costs one line."""
    path = cache_path()
    entries = _read(lambda line: None)
    entries[_key(width, batch)] = dict(choice, drivers=drivers_id())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(entries, indent=1, sort_keys=True) + "\n")
    except OSError as e:
        say(f"Cannot save the backend choice to {path} ({e.strerror or e}); the next start "
            "measures again.")


def _short(e: Exception) -> str:
    return " ".join(str(e).split())[:120] or type(e).__name__
