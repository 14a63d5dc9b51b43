"""What to install for an optional part, said the same way by every verb.

Owns: `torch_install_hint()`, the one PyTorch install line. PyPI's torch wheel for Linux is the
CUDA build (gigabytes of CUDA libraries): right on a machine with an NVIDIA GPU, where
`pip install 'leelaz[torch]'` gives it, and wasteful everywhere else, where PyTorch's own CPU
index gives the small CPU build. Imports: stdlib only; any module may use it.
"""

from __future__ import annotations

import os
import shutil

CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
GPU_TORCH = "pip install 'leelaz[torch]'"


def nvidia_gpu_present() -> bool:
    """An NVIDIA driver is loaded (its /proc entry or device node) or nvidia-smi is on the
    PATH: the signs that PyPI's CUDA build of torch can use a GPU here."""
    return (os.path.isdir("/proc/driver/nvidia") or os.path.exists("/dev/nvidia0")
            or shutil.which("nvidia-smi") is not None)


def torch_install_hint() -> str:
    """The command that installs the PyTorch this machine wants."""
    return GPU_TORCH if nvidia_gpu_present() else CPU_TORCH
