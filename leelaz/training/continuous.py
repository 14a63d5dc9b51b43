"""What makes training one continuing run: its learning-rate schedule, the order of its
batches, and the average of its recent snapshots that is exported.

Owns: `parse_lr_schedule` / `scheduled_lr` (a learning rate that is a function of the run's
total step count, not of one invocation), `BatchOrder` (the batch of a step, a function of
the seed and the step alone, so a run resumed from a checkpoint draws exactly the batches the
uninterrupted run would have drawn), `SnapshotAverage` (Leela Zero's SWA) and
`recompute_batch_norm`. Imports: torch, training.torch_model.

Leela Zero never restarted training: candidate networks were snapshots of one continuing run
(`training/tf/tfprocess.py`), and the file it wrote was an exponentially weighted average of
the last `swa_max_n` = 16 snapshots, with the batch-norm statistics of the averaged weights
recomputed on training batches (`swa_recalc_bn`), because averaged weights do not have the
average of the snapshots' statistics.
"""

from __future__ import annotations

import torch

from leelaz.training.torch_model import LeelaNet

#: Leela Zero's `swa_max_n`: the average weighs about the last 16 snapshots.
SWA_MAX_N = 16


class BatchOrder:
    """The batch of each step of a run on a set of n positions.

    The samples form one stream: sample k of the run is position perm_e[k mod n] with
    e = k // n and perm_e a permutation seeded by (seed, e), so every position is seen once
    per pass; a step's symmetries come from a generator seeded by (seed, step). Both depend
    only on the seed and the step (and the device kind), never on how many times the run was
    started, so a run resumed from its checkpoint draws exactly the batches the uninterrupted
    run drew. The current pass's permutation is kept on the device (one randperm per pass).
    """

    def __init__(self, seed: int, n: int, device):
        self.seed, self.n, self.device = seed, n, device
        self._epoch = -1
        self._perm: torch.Tensor | None = None

    def _permutation(self, epoch: int) -> torch.Tensor:
        if epoch != self._epoch:
            g = torch.Generator().manual_seed((self.seed * 1_000_003 + epoch) % 2**63)
            self._perm = torch.randperm(self.n, generator=g).to(self.device)
            self._epoch = epoch
        return self._perm

    def at(self, step: int, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(position indices [batch], symmetries [batch]) of the run's step `step`."""
        first = step * batch
        parts = []
        k = first
        while k < first + batch:
            epoch, offset = divmod(k, self.n)
            take = min(self.n - offset, first + batch - k)
            parts.append(self._permutation(epoch)[offset:offset + take])
            k += take
        # Drawn on the device by its own generator: a copy from the host would wait for the
        # GPU at every step.
        g = torch.Generator(device=self.device)
        g.manual_seed((self.seed * 1_000_033 + 7 * step + 1) % 2**63)
        symmetries = torch.randint(0, 8, (batch,), generator=g, device=self.device)
        return torch.cat(parts), symmetries


class SnapshotAverage:
    """Leela Zero's SWA: avg += (w - avg) / n with n = min(snapshots, max_n), over the
    trainable parameters (batch-norm statistics are recomputed for the average instead)."""

    def __init__(self, net: LeelaNet, max_n: int = SWA_MAX_N):
        self.max_n = max_n
        self.count = 0
        self.params = {k: v.detach().float().cpu().clone() for k, v in net.named_parameters()}

    @torch.no_grad()
    def add(self, net: LeelaNet) -> None:
        self.count += 1
        n = min(self.count, self.max_n)
        for name, p in net.named_parameters():
            avg = self.params[name]
            avg += (p.detach().float().cpu() - avg) / n

    def state_dict(self) -> dict:
        return {"count": self.count, "max_n": self.max_n, "params": self.params}

    def load_state_dict(self, state: dict) -> None:
        self.count = int(state["count"])
        self.max_n = int(state["max_n"])
        self.params = {k: v.float().cpu() for k, v in state["params"].items()}

    def network(self, net: LeelaNet) -> LeelaNet:
        """A float32 CPU copy of `net` with the averaged parameters (its batch-norm
        statistics are still net's: recompute them)."""
        avg = LeelaNet(net.blocks, net.filters)
        state = {k: v.detach().float().cpu() for k, v in net.state_dict().items()}
        state.update(self.params)
        avg.load_state_dict(state)
        return avg


@torch.no_grad()
def recompute_batch_norm(net: LeelaNet, batches) -> LeelaNet:
    """Set every batch norm's running mean and variance to their plain average over
    `batches` (iterables of input planes), in train mode, as Leela Zero's swa_recalc_bn does;
    returns net in eval mode."""
    layers = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    saved = [m.momentum for m in layers]
    for m in layers:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the batches
    net.train()
    seen = 0
    for planes in batches:
        net(planes)
        seen += 1
    for m, momentum in zip(layers, saved):
        m.momentum = momentum
    net.eval()
    if not seen:
        raise ValueError("no batches to recompute batch-norm statistics on")
    return net

