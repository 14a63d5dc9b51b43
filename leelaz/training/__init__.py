"""Training data (Leela Zero chunk records), the supervised data path and the trainer.

Owns: `torch_install_hint()`, the one sentence every verb gives when PyTorch is missing.
Imports: nothing (the package must import where PyTorch is not installed, so that the hint can
be given).
"""

#: PyTorch's own index of CPU-only wheels: about 200 MB, where PyPI's default Linux wheel
#: carries CUDA libraries (gigabytes) that a machine without an NVIDIA GPU never uses.
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"


def torch_install_hint() -> str:
    """What to install, right for both kinds of machine: the CPU build from PyTorch's index,
    or the `torch` extra (PyPI's CUDA build) on an NVIDIA GPU."""
    return (f"PyTorch is not installed: on a CPU `pip install torch --index-url {CPU_WHEELS}`; "
            "on an NVIDIA GPU `pip install 'leelaz[torch]'`")
