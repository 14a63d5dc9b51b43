"""Writing a trained network as a Leela Zero weights file (version 1, text or gzip).

Owns: the mapping from LeelaNet's tensors to the file's lines (src/Network.cpp); the text and
the atomic write are backends.weights_writer's, the package's one writer. Imports: torch,
numpy, torch_model, backends.weights_writer.

Line by line, as Leela Zero's tfprocess writes it: for each conv+BN the conv weights
[out][in][ky][kx], then a "bias" line holding beta * sqrt(var + eps) (the engine subtracts it
from the mean at load, which turns (x - mean) / sqrt(var + eps) back into BN(x) + beta), then
the running mean and the running variance. FC layers are weights [out][in] then bias.
"""

from __future__ import annotations

import numpy as np
import torch

from leelaz.backends.weights_writer import write_weights
from leelaz.training.torch_model import BN_EPSILON, ConvBN, LeelaNet


def _conv_bn_lines(layer: ConvBN) -> list[np.ndarray]:
    var = layer.bn.running_var.detach().double()
    bias = layer.beta.detach().double() * torch.sqrt(var + BN_EPSILON)
    return [layer.conv.weight.detach().double().reshape(-1).numpy(), bias.numpy(),
            layer.bn.running_mean.detach().double().numpy(), var.numpy()]


def _fc_lines(fc: torch.nn.Linear) -> list[np.ndarray]:
    return [fc.weight.detach().double().reshape(-1).numpy(),
            fc.bias.detach().double().reshape(-1).numpy()]


def network_tensors(net: LeelaNet) -> list[np.ndarray]:
    """Every parameter line of the file, in file order (1 + 4 + 8B + 14 lines with the
    version)."""
    lines: list[np.ndarray] = []
    for layer in net.conv_bns():
        lines += _conv_bn_lines(layer)
    lines += _conv_bn_lines(net.policy_conv) + _fc_lines(net.policy_fc)
    lines += _conv_bn_lines(net.value_conv) + _fc_lines(net.value_fc1) + _fc_lines(net.value_fc2)
    return lines


def export_weights(net: LeelaNet, path: str) -> None:
    """Write `path` (gzip when it ends in .gz) completely or not at all."""
    write_weights(path, network_tensors(net), version=1)
