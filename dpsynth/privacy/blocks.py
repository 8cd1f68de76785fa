"""Clipped sums over a batch in blocks of rows (performance only): per-example clipping makes each block's sum
independent of the others, so the blocks' sums add up to the whole batch's (used by the exact and the ghost
per-example paths)."""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["sum_in_blocks"]

BlockResult = tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]


def sum_in_blocks(compute: Callable[[tuple[torch.Tensor, ...]], BlockResult], batch: tuple[torch.Tensor, ...],
                  block: int | None) -> BlockResult:
    """``compute(part) -> (clipped sums by name, (b,) norms, (b,) losses)`` on blocks of ``block`` rows (the whole
    batch when ``block`` is None or not smaller), the sums added and the norms and losses concatenated."""
    n = int(batch[0].shape[0])
    if not block or n <= block:
        return compute(batch)
    total: dict[str, torch.Tensor] | None = None
    norms, losses = [], []
    for start in range(0, n, block):
        part_sum, norm, loss = compute(tuple(t[start:start + block] for t in batch))
        if total is None:
            total = part_sum
        else:
            for name, value in part_sum.items():
                total[name].add_(value)
        norms.append(norm)
        losses.append(loss)
    return total, torch.cat(norms), torch.cat(losses)
