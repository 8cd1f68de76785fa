"""Per-example gradients of any ``nn.Module`` loss with ``torch.func`` (functional_call + vmap + grad).

A loss is written for ONE example: ``per_example_loss(model_fn, *example) -> scalar``, where ``model_fn(*inputs)``
runs the module functionally with the parameters being differentiated, and each tensor of ``example`` is one row
(no batch dimension). It is vmapped over dim 0 of every tensor in the batch. Because the loss is a plain function,
it may itself contain a gradient with respect to its input — e.g. a WGAN-GP penalty on an interpolate of *this*
record (:func:`input_gradient`) — and that term is then part of the record's per-example gradient, so clipping
covers the whole loss that touches the record (DESIGN.md §1 rule 4). Random draws that the loss needs (fake rows,
interpolation weights) should be passed in as extra batch tensors drawn from a seeded generator.

Guarantees (tested in tests/privacy/test_per_example.py):
- ``per_example_grads(...)[name][i]`` equals the gradient of the loss on the batch of one ``batch[i]``
  (to float tolerance), including a gradient-penalty term.
- ``clip_and_sum`` scales each example's full gradient (all parameters jointly) to L2 norm <= ``max_norm``
  (Abadi et al. 2016, Alg. 1) before summing. An example whose gradient is not finite (inf or NaN, e.g. from an
  infinite input) contributes zero: ``0 * inf`` would be NaN and turn the whole noisy update into NaN, which
  would reveal that such a record is present; zero has norm <= C, so the sensitivity is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpsynth.privacy.blocks import sum_in_blocks
from dpsynth.privacy.ghost import refuse_inside_ghost

__all__ = [
    "per_example_grads",
    "per_example_norms",
    "clip_and_sum",
    "clipped_sum",
    "clip_factors",
    "input_gradient",
    "trainable_params",
]

PerExampleLoss = Callable[..., torch.Tensor]


def input_gradient(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """d(sum fn(x))/dx, composable with vmap/grad (use it for gradient penalties inside a per-example loss)."""
    refuse_inside_ghost("an input gradient (gradient penalty)")  # the ghost identities do not cover it
    return grad(lambda z: fn(z).sum())(x)


def functional_loss(module: nn.Module, per_example_loss: PerExampleLoss):
    def loss(params, buffers, *example):
        def model_fn(*inputs):
            return functional_call(module, (params, buffers), inputs)

        value = per_example_loss(model_fn, *example)
        if value.dim() != 0:
            value = value.sum()  # a (1,)-shaped output of one example
        return value, value.detach()

    return loss


def trainable_params(module: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach() for n, p in module.named_parameters() if p.requires_grad}


def per_example_grads(
    module: nn.Module,
    per_example_loss: PerExampleLoss,
    batch: tuple[torch.Tensor, ...],
    *,
    chunk_size: int | None = None,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Per-example gradients ``{name: (B, *param.shape)}`` of the trainable parameters, and the (B,) losses.

    ``chunk_size`` (performance only; does not change the result) bounds the memory of the vmap.
    """
    params = trainable_params(module)
    buffers = {n: b.detach() for n, b in module.named_buffers()}
    loss = functional_loss(module, per_example_loss)
    in_dims = (None, None) + (0,) * len(batch)
    fn = vmap(grad(loss, has_aux=True), in_dims=in_dims, randomness="different", chunk_size=chunk_size)
    grads, losses = fn(params, buffers, *batch)
    return grads, losses


def per_example_norms(grads: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B,) L2 norms of each example's gradient over all parameters jointly."""
    # one fused norm per parameter (no squared temporary of the size of the per-example gradients)
    # (a 0-d parameter's per-example gradients are (B,): reshape, not flatten(start_dim=1))
    per_param = [torch.linalg.vector_norm(g.reshape(g.shape[0], -1), dim=1) for g in grads.values()]
    return torch.linalg.vector_norm(torch.stack(per_param, dim=1), dim=1)


def clip_factors(norms: torch.Tensor, max_norm: float) -> torch.Tensor:
    """min(1, C / norm): multiplying a vector of norm ``norm`` by it gives norm <= C."""
    return (max_norm / (norms + 1e-6)).clamp(max=1.0)


def clip_and_sum(grads: dict[str, torch.Tensor], max_norm: float) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Clip each example's gradient to L2 norm ``max_norm`` and sum over examples; also return the (B,) norms."""
    norms = per_example_norms(grads)
    factors = clip_factors(norms, max_norm)
    finite = torch.isfinite(norms)
    if not bool(finite.all()):
        factors = torch.where(finite, factors, torch.zeros_like(factors))
        grads = {n: zero_rows(g, ~finite) for n, g in grads.items()}
    summed = {n: torch.tensordot(factors, g, dims=1) for n, g in grads.items()}
    return summed, norms


def zero_rows(g: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``g`` with the examples (dim 0) selected by the boolean mask ``rows`` set to 0 (a copy)."""
    mask = rows.reshape(-1, *([1] * (g.dim() - 1)))
    return torch.where(mask, torch.zeros((), dtype=g.dtype), g)


def clipped_sum(
    module: nn.Module,
    per_example_loss: PerExampleLoss,
    batch: tuple[torch.Tensor, ...],
    max_norm: float,
    *,
    block: int | None = 64,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Sum over examples of per-example gradients clipped to ``max_norm``; also the (B,) norms and losses.

    Examples are processed in blocks of ``block`` rows (performance only: each example is still clipped on its own,
    the result is the same sum) so that at most ``block`` per-example gradients are held in memory at once.
    """
    def compute(part):
        grads, loss = per_example_grads(module, per_example_loss, part)
        summed, norm = clip_and_sum(grads, max_norm)
        return summed, norm, loss

    return sum_in_blocks(compute, batch, block)
