"""Leela Zero's residual network in PyTorch, for training.

Owns: the trainable model whose parameters map one to one onto a Leela Zero weights file
(src/Network.cpp). Imports: torch (the trainer's extra dependency); backends.base (the
input layout and the layer sizes, shared with every backend); backends.weights lazily, to
read a file's lines (from_file).

Architecture, with F filters and B blocks (identical to the C++ engine's forward pass):
    input conv 3x3 18->F, BN, ReLU
    B x [conv 3x3 F->F, BN, ReLU, conv 3x3 F->F, BN, + block input, ReLU]
    policy: conv 1x1 F->2, BN, ReLU, FC 722->362 (channel-major flatten) -> logits
    value:  conv 1x1 F->1, BN, ReLU, FC 361->256, ReLU, FC 256->1, tanh  -> [-1, 1]

Like Leela Zero's tfprocess the convolutions have no bias and batch norm has a learned shift
(beta) but no scale (gamma): the weights file has no line for gamma, and beta is folded into
the file's bias line by export.py.
"""

from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F

# The layout's one owner is the backend seam: the trained model reads and writes the same files.
from leelaz.backends.base import BN_EPSILON, BOARD_SQUARES, POLICY_OUTPUTS, VALUE_HIDDEN
from leelaz.backends.base import INPUT_CHANNELS as INPUT_PLANES


class ConvBN(nn.Module):
    """Convolution (no bias) then batch norm with a shift and no scale; ReLU is the caller's."""

    def __init__(self, in_ch: int, out_ch: int, kernel: int):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel, padding=kernel // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_ch, eps=BN_EPSILON, affine=False, momentum=0.01)
        self.beta = nn.Parameter(torch.zeros(out_ch))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x)) + self.beta.view(1, -1, 1, 1).to(x.dtype)

    @torch.no_grad()
    def load_file_lines(self, weights, bias, mean, var) -> None:
        """Set this layer from its four lines of a weights file (conv, bias, mean, variance).

        As Leela Zero's `training/tf/tfprocess.py` (`replace_weights`) reads a file back for
        training: the mean and variance are the file's, and the bias line, which export wrote
        as beta * sqrt(var + eps), becomes beta again. The engine folds the bias into the mean
        instead (backends/weights.py); that is the same function in eval mode, but in train
        mode batch norm uses the batch's statistics in place of the mean and the learned shift
        would be lost. Computed in float64 so that export -> load -> export gives the same
        text."""
        self.conv.weight.copy_(torch.from_numpy(
            weights.reshape(self.conv.weight.shape).astype("float32")))
        var64 = torch.from_numpy(var.astype("float64"))
        beta = torch.from_numpy(bias.astype("float64")) / torch.sqrt(var64 + BN_EPSILON)
        self.bn.running_mean.copy_(torch.from_numpy(mean.astype("float32")))
        self.bn.running_var.copy_(var64.float())
        self.beta.copy_(beta.float())

    @torch.no_grad()
    def load_folded(self, weights, mean, scale) -> None:
        """Set this layer from the engine's folded form: scale * (conv(x) - mean).

        The same network in eval mode only: the folded form has lost the split between the
        bias and the mean, so beta is 0 and train mode differs (use LeelaNet.from_file)."""
        self.conv.weight.copy_(torch.from_numpy(weights.reshape(self.conv.weight.shape).copy()))
        self.bn.running_mean.copy_(torch.from_numpy(mean.astype("float32")))
        scale = torch.from_numpy(scale.astype("float64"))
        self.bn.running_var.copy_((1.0 / scale ** 2 - BN_EPSILON).clamp(min=0.0).float())
        self.beta.zero_()


class ResidualBlock(nn.Module):
    def __init__(self, filters: int):
        super().__init__()
        self.first = ConvBN(filters, filters, 3)
        self.second = ConvBN(filters, filters, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.first(x))
        return F.relu(self.second(y) + x)


class LeelaNet(nn.Module):
    """The whole network; forward(planes[B,18,19,19]) -> (policy logits [B,362], value [B])."""

    def __init__(self, blocks: int, filters: int):
        super().__init__()
        self.blocks = blocks
        self.filters = filters
        self.input_conv = ConvBN(INPUT_PLANES, filters, 3)
        self.tower = nn.ModuleList(ResidualBlock(filters) for _ in range(blocks))
        self.policy_conv = ConvBN(filters, 2, 1)
        self.policy_fc = nn.Linear(2 * BOARD_SQUARES, POLICY_OUTPUTS)
        self.value_conv = ConvBN(filters, 1, 1)
        self.value_fc1 = nn.Linear(BOARD_SQUARES, VALUE_HIDDEN)
        self.value_fc2 = nn.Linear(VALUE_HIDDEN, 1)
        self._init_weights()

    def _init_weights(self) -> None:
        """He-normal convolutions; the last conv of each block starts small so the tower
        begins close to the identity, which trains faster and more stably."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        for block in self.tower:
            block.second.conv.weight.data.mul_(0.25)
        nn.init.xavier_uniform_(self.policy_fc.weight)
        nn.init.zeros_(self.policy_fc.bias)
        nn.init.xavier_uniform_(self.value_fc1.weight)
        nn.init.zeros_(self.value_fc1.bias)
        nn.init.xavier_uniform_(self.value_fc2.weight)
        nn.init.zeros_(self.value_fc2.bias)

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.relu(self.input_conv(planes))
        for block in self.tower:
            x = block(x)
        p = F.relu(self.policy_conv(x)).flatten(1)  # channel-major: c * 361 + idx
        policy = self.policy_fc(p)
        v = F.relu(self.value_conv(x)).flatten(1)
        v = F.relu(self.value_fc1(v))
        value = torch.tanh(self.value_fc2(v)).squeeze(1)
        return policy, value

    @classmethod
    def from_file(cls, path: str) -> "LeelaNet":
        """The network of a Leela Zero weights file, ready to train: batch norm's mean,
        variance and beta restored from the file's lines (ConvBN.load_file_lines), so that it
        gives the same outputs in train mode (batch statistics) as in eval mode, up to batch
        noise. Raises backends.weights.WeightsError naming the file for a bad file, and
        ValueError for a version 2 file (see from_weights)."""
        from leelaz.backends.weights import parse_tensors, read_text

        version, tensors = parse_tensors(read_text(path), path)
        return cls.from_tensors(version, tensors, path)

    @classmethod
    def from_tensors(cls, version: int, tensors: list, source: str = "weights") -> "LeelaNet":
        """The network of a weights file's checked lines (backends.weights.parse_tensors), in
        the file order that export.network_tensors writes."""
        if version != 1:
            raise ValueError(f"{source}: version {version} networks cannot be trained here "
                             "(only version 1)")
        filters = tensors[1].size
        blocks = (len(tensors) - 18) // 8
        net = cls(blocks, filters)
        lines = list(tensors)
        with torch.no_grad():
            for layer in net.conv_bns():
                layer.load_file_lines(*(lines.pop(0) for _ in range(4)))
            net.policy_conv.load_file_lines(*(lines.pop(0) for _ in range(4)))
            _load_fc(net.policy_fc, lines.pop(0), lines.pop(0))
            net.value_conv.load_file_lines(*(lines.pop(0) for _ in range(4)))
            _load_fc(net.value_fc1, lines.pop(0), lines.pop(0))
            _load_fc(net.value_fc2, lines.pop(0), lines.pop(0))
        return net

    @classmethod
    def from_weights(cls, weights) -> "LeelaNet":
        """The network of a loaded Leela Zero weights file (backends.base.NetWeights), the
        same in eval mode; for training use from_file, which restores beta.

        NetWeights holds batch norm folded as the engine uses it (mean - bias, and
        1/sqrt(var + eps)); here the mean is that folded mean, beta is 0 and the variance is
        recovered from the scale, which computes the same function in eval mode. Version 2
        files (ELF's, the value for Black) would train a value head of the wrong sign and are
        refused."""
        if weights.version != 1:
            raise ValueError(f"{weights.source or 'weights'}: version {weights.version} "
                             "networks cannot be trained here (only version 1)")
        net = cls(weights.blocks, weights.filters)
        layers = [(net.input_conv, weights.input_conv)]
        for block, (first, second) in zip(net.tower, weights.tower):
            layers += [(block.first, first), (block.second, second)]
        layers += [(net.policy_conv, weights.policy_conv), (net.value_conv, weights.value_conv)]
        with torch.no_grad():
            for layer, conv in layers:
                layer.load_folded(conv.weights, conv.mean, conv.scale)
            for fc, w, b in ((net.policy_fc, weights.policy_fc_w, weights.policy_fc_b),
                             (net.value_fc1, weights.value_fc1_w, weights.value_fc1_b),
                             (net.value_fc2, weights.value_fc2_w, weights.value_fc2_b)):
                _load_fc(fc, w, b)
        return net

    def conv_bns(self) -> list[ConvBN]:
        """Every conv+BN in weights-file order (input, tower, then policy and value heads
        are reached separately by the exporter)."""
        out = [self.input_conv]
        for block in self.tower:
            out += [block.first, block.second]
        return out

    def weight_decay_parameters(self) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
        """(decayed, not decayed): L2 applies to conv and FC weights, not to biases or beta,
        as in Leela Zero's tfprocess."""
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            (decay if name.endswith("weight") else no_decay).append(p)
        return decay, no_decay


def _load_fc(fc: nn.Linear, weight, bias) -> None:
    fc.weight.copy_(torch.from_numpy(weight.reshape(fc.weight.shape).astype("float32")))
    fc.bias.copy_(torch.from_numpy(bias.reshape(fc.bias.shape).astype("float32")))


def loss_terms(policy_logits: torch.Tensor, value: torch.Tensor, policy_target: torch.Tensor,
               value_target: torch.Tensor, value_mask: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy cross-entropy, value MSE), each a batch mean; computed in float32.

    policy_target is a probability vector [B,362] (one-hot for supervised games); value_target
    is +1/-1 for the side to move; value_mask is 1 where the game's result is usable.
    """
    logp = F.log_softmax(policy_logits.float(), dim=1)
    policy_loss = -(policy_target * logp).sum(dim=1).mean()
    sq = (value.float() - value_target) ** 2 * value_mask
    value_loss = sq.sum() / value_mask.sum().clamp(min=1.0)
    return policy_loss, value_loss
