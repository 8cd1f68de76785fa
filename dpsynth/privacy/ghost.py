"""Per-example clipping without per-example gradients of linear and embedding layers: ghost norms and book-keeping
(issue 23).

For a linear layer ``z = W a + b`` that one example calls at positions ``p = 1..P`` (a sequence, or several calls in
its loss, e.g. a critic on a real and a fake row), the example's gradient is ``dW = sum_p g_p a_p^T`` and
``db = sum_p g_p``, with ``g_p = dL/dz_p``. So, without forming ``dW`` (Goodfellow 2015; Li et al. 2022 "ghost
clipping"; Bu et al. 2023 "book-keeping"):

* ``||dW||_F^2 = sum_{p,q} (a_p . a_q)(g_p . g_q)``: for ``P = 1`` the product ``|a|^2 |g|^2``; for small ``P``
  the two P x P Gram matrices; when ``P^2 (in + out) > in * out`` forming ``dW`` is cheaper and is done (mixed
  ghost clipping);
* the clipped sum ``sum_i c_i dW_i = (c * G)^T A`` is one matrix product over the batch's stored ``A`` and ``G``
  (book-keeping: no second backward pass).

An embedding ``z_p = E[k_p]`` is the same layer with one-hot inputs: ``dE = sum_p e_{k_p} g_p^T``, so
``||dE||_F^2 = sum_{p,q} [k_p = k_q] (g_p . g_q)`` and the clipped sum adds ``c_i g_p`` into row ``k_p``
(``index_add``); positions at ``padding_idx`` get no gradient, as in PyTorch. Embeddings with ``max_norm`` (which
renormalises rows inside the forward pass) or ``scale_grad_by_freq`` (a gradient that depends on the rest of the
batch) or sparse gradients take the exact path below. LayerNorm's parameters are O(width): their exact per-example
gradients cost no more than a ghost identity would, so they are not given one.

``a_p`` and ``g_p`` come from one pass: the example's loss is vmapped over the batch (so a loss written for one
example runs as one batched forward), each ``nn.Linear`` adds a zero *probe* (one per example and call) to its
output, through its bias so that the matrix product absorbs the addition, and records its input (an embedding does
both in a forward hook), and one ordinary backward pass of the summed losses gives each probe's
gradient, which is ``g`` of its own example (example i's loss reads only probe i). Every other trainable parameter
(LayerNorm, convolutions, a bare ``nn.Parameter``) gets its exact per-example gradient in the same
backward pass, through a per-example copy of it, and its squared norm joins the linear layers' ghost norms, so each
example's **whole** gradient is clipped to ``C`` jointly, exactly as :func:`~dpsynth.privacy.per_example.clipped_sum`
does; an example whose norm is not finite contributes zero. The result equals the exact path to float tolerance
(tests/privacy/test_ghost.py, on random models).

Not supported, and reported by :class:`GhostUnsupported` so that the engine uses the exact path: a loss that
differentiates through the model (a gradient penalty, :func:`~dpsynth.privacy.per_example.input_gradient`: the
weights then enter the loss through a backward pass too, and the identities above no longer hold), a linear layer
whose parameters are shared with another module (it takes the exact path inside the ghost pass), and a module with
no trainable linear or embedding layer.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.nn import functional as F

from dpsynth.errors import PrivacyError
from dpsynth.privacy.blocks import sum_in_blocks

__all__ = ["GhostClipper", "GhostUnsupported", "ghost_clipped_sum", "ghost_applicable", "is_rowwise",
           "refuse_inside_ghost", "rowwise"]

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("dpsynth_ghost_pass", default=False)
_ROWWISE = "__dpsynth_rowwise__"
_ROWWISE_CHECK_ROWS = 8


def rowwise(per_example_loss: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """Mark a per-example loss as also computing a whole batch row by row: called on (B, ...) tensors it returns
    the (B,) per-row losses, row i reading only row i of every input (``reduction="none"``, reductions over the
    last axes only, no random draws inside: pass them as batch tensors). Ghost clipping then runs it once on the
    batch instead of once per example under vmap. The mark is checked, not trusted: on the first batch of each
    row shape the row-wise losses and per-row gradients must equal the vmapped ones, or the loss runs vmapped
    (silently: the check reads private rows). The exact per-example path ignores the mark. Returns the function."""
    setattr(per_example_loss, _ROWWISE, True)
    return per_example_loss


def is_rowwise(per_example_loss) -> bool:
    return bool(getattr(per_example_loss, _ROWWISE, False))


class GhostUnsupported(Exception):
    """The loss or the module needs the exact per-example path (module docstring)."""


def refuse_inside_ghost(what: str) -> None:
    """Called by operations the ghost identities do not cover (an input gradient inside the loss)."""
    if _ACTIVE.get():
        raise GhostUnsupported(f"{what} inside the per-example loss: ghost clipping does not apply")


def _ghostable(m: nn.Module) -> bool:
    if type(m) is nn.Linear:
        return True
    return (type(m) is nn.Embedding and m.max_norm is None and not m.scale_grad_by_freq and not m.sparse)


def _ghost_layers(module: nn.Module) -> dict[str, nn.Linear | nn.Embedding]:
    """The ``nn.Linear`` and ``nn.Embedding`` submodules (module docstring) whose parameters are all trainable and
    used by no other module."""
    owners: dict[int, int] = {}
    for _, m in module.named_modules(remove_duplicate=False):
        for p in m.parameters(recurse=False):
            owners[id(p)] = owners.get(id(p), 0) + 1
    out = {}
    for name, m in module.named_modules():
        if not _ghostable(m):
            continue
        params = [p for p in (m.weight, getattr(m, "bias", None)) if p is not None]
        if all(p.requires_grad for p in params) and all(owners[id(p)] == 1 for p in params):
            out[name] = m
    return out


def ghost_applicable(module: nn.Module) -> bool:
    """At least half of the trainable parameters sit in ghost-able linear / embedding layers (where ghost clipping
    pays)."""
    linear = sum(p.numel() for m in _ghost_layers(module).values() for p in m.parameters())
    total = sum(p.numel() for p in module.parameters() if p.requires_grad)
    return total > 0 and 2 * linear >= total


def _prefixed(name: str, leaf: str) -> str:
    return f"{name}.{leaf}" if name else leaf


class GhostClipper:
    """Ghost clipping for one module, set up once (its linear layers, parameter names and the probe shapes of each
    batch shape are cached across steps). ``clipper(per_example_loss, batch, max_norm)`` is
    :func:`ghost_clipped_sum`."""

    def __init__(self, module: nn.Module):
        self.module = module
        self.layers = _ghost_layers(module)
        if not self.layers:
            raise GhostUnsupported("no trainable nn.Linear or nn.Embedding layer")
        self.ghost_names = {_prefixed(n, leaf) for n, m in self.layers.items() for leaf in ("weight", "bias")
                            if getattr(m, leaf, None) is not None}
        self.trainable_names = [n for n, p in module.named_parameters() if p.requires_grad]
        self._shapes: dict[tuple, dict[str, list[torch.Size]]] = {}
        self._rowwise_checked: set[tuple] = set()
        self.rowwise_refused: set[tuple] = set()  # (loss, row shapes) whose row-wise check failed: run vmapped

    def _run(self, probes, other, example, record, per_example_loss):
        """The example's loss with probes added to every linear output; ``record`` collects (name, input)."""
        calls = dict.fromkeys(self.layers, 0)

        def hook_for(name):  # an embedding: the probe is added to its output
            def hook(_module, inputs, output):
                k = calls[name]
                calls[name] += 1
                record.append((name, inputs[0]))
                return output if probes is None else output + probes[name][k]
            return hook

        def forward_for(name, layer):  # a linear layer: the probe joins its bias, so the addition is fused into
            def forward(x):            # the matrix product (a separate addition under vmap cost a third of it)
                k = calls[name]
                calls[name] += 1
                record.append((name, x))
                if probes is None:
                    return F.linear(x, layer.weight, layer.bias)
                probe = probes[name][k]
                return F.linear(x, layer.weight, probe if layer.bias is None else layer.bias + probe)
            return forward

        handles = []
        token = _ACTIVE.set(True)
        try:
            for n, m in self.layers.items():
                if isinstance(m, nn.Linear):
                    m.forward = forward_for(n, m)  # an instance attribute: removed below (the class's forward again)
                else:
                    handles.append(m.register_forward_hook(hook_for(n)))
            if other:  # parameters outside the ghost layers are differentiated: pass them functionally
                fixed = {n: p.detach() for n, p in self.module.named_parameters() if n not in other}
                buffers = {n: b.detach() for n, b in self.module.named_buffers()}

                def model_fn(*inputs):
                    return functional_call(self.module, ({**fixed, **other}, buffers), inputs)
            else:  # only probes are differentiated: the module runs as it is (no weight gradient is formed)
                model_fn = self.module
            value = per_example_loss(model_fn, *example)
        finally:
            _ACTIVE.reset(token)
            for h in handles:
                h.remove()
            for m in self.layers.values():
                m.__dict__.pop("forward", None)
        return value

    def _probe_shapes(self, per_example_loss, batch) -> dict[str, list[torch.Size]]:
        """The output shape of every call of every linear layer, from one example (shapes do not depend on the
        values), cached by the batch's per-example shapes and the loss."""
        key = (per_example_loss, tuple((tuple(t.shape[1:]), t.dtype) for t in batch))
        if key not in self._shapes:
            record: list = []
            with torch.no_grad():
                self._run(None, {}, tuple(t[:1][0] for t in batch), record, per_example_loss)
            shapes: dict[str, list[torch.Size]] = {n: [] for n in self.layers}
            for name, a in record:
                layer = self.layers[name]
                if isinstance(layer, nn.Embedding):  # a (...) tensor of indices -> (..., dim)
                    shapes[name].append(torch.Size((*a.shape, layer.embedding_dim)))
                else:
                    shapes[name].append(torch.Size((*a.shape[:-1], layer.out_features)))
            self._shapes[key] = shapes
        return self._shapes[key]

    def __call__(self, per_example_loss, batch, max_norm, *, block: int | None = 1024):
        """The clipped sum over ``batch`` in blocks of ``block`` rows (performance only: each example is clipped on
        its own, so the blocks' sums add up to the same result; a block bounds the stored inputs and probes)."""
        return sum_in_blocks(lambda part: self._block(per_example_loss, part, max_norm), batch, block)

    def _block(self, per_example_loss, batch, max_norm):
        layers = self.layers
        n = int(batch[0].shape[0])
        shapes = self._probe_shapes(per_example_loss, batch)
        params = dict(self.module.named_parameters()) if len(self.ghost_names) < len(self.trainable_names) else {}
        # one probe per example and call, and per-example copies of the other trainable parameters: leaves of an
        # ordinary backward pass through the forward, whose gradients are then per-example by construction
        # (example i's loss reads only its own probe and its own copy)
        probes = tuple(torch.zeros((n, *s), dtype=layers[name].weight.dtype, requires_grad=True)
                       for name in layers for s in shapes[name])
        others = {name: params[name].detach().expand(n, *params[name].shape).clone().requires_grad_(True)
                  for name in self.trainable_names if name not in self.ghost_names}
        if is_rowwise(per_example_loss) and not others and self._rowwise_checked_on(per_example_loss, batch, shapes):
            losses, order, recorded = self._rowwise_forward(per_example_loss, batch, shapes, probes)
        else:
            losses, order, recorded = self._vmapped_forward(per_example_loss, batch, shapes, probes, others)
        leaves = [*probes, *others.values()]
        grads = torch.autograd.grad(losses.sum(), leaves, allow_unused=True) if leaves else []
        grads = [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, grads)]
        g_probes, k = {}, 0
        for name in layers:
            g_probes[name] = grads[k:k + len(shapes[name])]
            k += len(shapes[name])
        g_other = dict(zip(others, grads[k:]))
        inputs: dict[str, list[torch.Tensor]] = {name: [] for name in layers}
        for name, a in zip(order, recorded):
            inputs[name].append(a.detach())
        return _clip_and_keep(layers, self.trainable_names, shapes, inputs, g_probes, g_other, losses.detach(),
                              max_norm, n)

    def _split(self, flat_probes, shapes) -> dict[str, list[torch.Tensor]]:
        calls = iter(flat_probes)
        return {name: [next(calls) for _ in shapes[name]] for name in self.layers}

    def _vmapped_forward(self, per_example_loss, batch, shapes, probes, others):
        """(B,) losses, the layer of each recorded input and the recorded (B, ...) inputs, the loss run per example
        under vmap. Probes and recorded inputs cross vmap as flat tuples: vmap flattens its arguments and results
        as trees on every call, and for a dict of lists that cost as much as a layer's matrix product."""
        order: list[str] = []  # the function runs once under vmap

        def per_example(flat_probes, other, *example):
            record: list = []
            value = self._run(self._split(flat_probes, shapes), other, example, record, per_example_loss)
            order[:] = [name for name, _ in record]
            return (value.sum() if value.dim() else value), tuple(a for _, a in record)

        in_dims = (0, 0) + (0,) * len(batch)
        losses, recorded = vmap(per_example, in_dims=in_dims, randomness="different")(probes, others, *batch)
        return losses, order, recorded

    def _rowwise_forward(self, per_example_loss, batch, shapes, probes):
        """The same as :meth:`_vmapped_forward` for a :func:`rowwise` loss: one call on the whole batch (vmap's
        per-operation cost, a fifth of an MLP step at batch 256, is not paid)."""
        record: list = []
        value = self._run(self._split(probes, shapes), {}, batch, record, per_example_loss)
        n = int(batch[0].shape[0])
        if value.dim() == 0 or value.shape[0] != n:  # no sizes in the message: the batch size is not released
            raise PrivacyError("a rowwise loss must return one value per row of its batch. Found another shape.")
        return value.reshape(n, -1).sum(dim=1), [name for name, _ in record], tuple(a for _, a in record)

    def _rowwise_checked_on(self, per_example_loss, batch, shapes) -> bool:
        """Once per loss and row shape: on the first rows of the batch, the row-wise call must give the per-example
        losses, recorded inputs and probe gradients of the vmapped call, or the loss runs vmapped from then on. A loss
        that mixes rows (a batch mean, a softmax over the batch axis) or draws random numbers inside fails here,
        before any of its gradients is used. The outcome is never reported (no error, no warning): the check reads
        private rows, and both paths compute the same clipped sum for a row-wise loss, so only speed depends on it
        (``rowwise_refused`` lists the refused losses, for tests). A block of fewer than 2 rows cannot show mixing:
        it runs vmapped and the check waits for a larger one."""
        key = (per_example_loss, tuple((tuple(t.shape[1:]), t.dtype) for t in batch))
        if key in self.rowwise_refused:
            return False
        if key in self._rowwise_checked:
            return True
        rows = tuple(t[:_ROWWISE_CHECK_ROWS] for t in batch)
        m = int(rows[0].shape[0])
        if m < 2:
            return False
        results = []
        try:
            for forward in (self._rowwise_forward, lambda *a: self._vmapped_forward(*a, {})):
                probes = tuple(torch.zeros((m, *s), dtype=self.layers[name].weight.dtype, requires_grad=True)
                               for name in self.layers for s in shapes[name])
                losses, order, recorded = forward(per_example_loss, rows, shapes, probes)
                grads = torch.autograd.grad(losses.sum(), probes, allow_unused=True)
                inputs = [a.detach().to(torch.float64) for _, a in sorted(zip(order, recorded), key=lambda r: r[0])]
                results.append([losses.detach(), *inputs,
                                *(torch.zeros_like(p) if g is None else g for p, g in zip(probes, grads))])
        except PrivacyError:  # not one value per row
            results = [[], [None]]
        row_wise, vmapped = results
        same = len(row_wise) == len(vmapped) and all(
            a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-5 * (1.0 + _largest(b)))
            for a, b in zip(row_wise, vmapped))
        (self._rowwise_checked if same else self.rowwise_refused).add(key)
        return same


def ghost_clipped_sum(
    module: nn.Module,
    per_example_loss: Callable[..., torch.Tensor],
    batch: tuple[torch.Tensor, ...],
    max_norm: float,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """Sum over examples of per-example gradients clipped jointly to ``max_norm``; also the (B,) norms and losses.

    The same contract as :func:`~dpsynth.privacy.per_example.clipped_sum`; raises :class:`GhostUnsupported` when
    the module or the loss needs the exact path. (A training loop keeps one :class:`GhostClipper` instead.)"""
    return GhostClipper(module)(per_example_loss, batch, max_norm)


def _clip_and_keep(layers, trainable_names, shapes, inputs, g_probes, g_other, losses, max_norm, n):
    """Norms from the ghost identities and the other parameters' per-example gradients; clip factors; the clipped
    sums by book-keeping."""
    squared = torch.zeros(n)
    stacked = {}
    for name, m in layers.items():
        if not shapes[name]:  # not called by this loss: zero gradient
            continue
        if isinstance(m, nn.Embedding):
            k = _positions([x.reshape(n, -1) for x in inputs[name]])  # (B, P) row indices
            g = _positions([y.reshape(n, -1, m.embedding_dim) for y in g_probes[name]])  # (B, P, dim)
            if m.padding_idx is not None:  # the padding row gets no gradient
                g = _zero_rows_where(g, k == m.padding_idx)
            stacked[name] = (k, g)
            squared = squared + _embedding_norm2(k, g)
            continue
        a = _positions([x.reshape(n, -1, m.in_features) for x in inputs[name]])  # (B, P, in)
        g = _positions([y.reshape(n, -1, m.out_features) for y in g_probes[name]])  # (B, P, out)
        stacked[name] = (a, g)
        if a.shape[1] == 1:  # one call per example: |a|^2 |g|^2, plus |g|^2 for the bias, in a few kernels
            g2 = torch.linalg.vecdot(g, g).squeeze(1)
            a2 = torch.linalg.vecdot(a, a).squeeze(1)
            squared = squared.addcmul_(a2.add_(1.0) if m.bias is not None else a2, g2)
            continue
        squared = squared + _weight_norm2(a, g)
        if m.bias is not None:
            squared = squared + g.sum(dim=1).pow(2).sum(dim=1)
    for g in g_other.values():
        squared = squared + g.reshape(n, -1).pow(2).sum(dim=1)
    norms = squared.sqrt()
    factors = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    finite = torch.isfinite(norms)
    if not bool(finite.all()):  # a non-finite example contributes zero (0 * inf would be NaN)
        factors = torch.where(finite, factors, torch.zeros_like(factors))
        stacked = {k: (a if isinstance(layers[k], nn.Embedding) else _zero_rows(a, ~finite), _zero_rows(g, ~finite))
                   for k, (a, g) in stacked.items()}
        g_other = {k: _zero_rows(g, ~finite) for k, g in g_other.items()}

    total: dict[str, torch.Tensor] = {}
    for name, m in layers.items():
        weight, bias = _prefixed(name, "weight"), _prefixed(name, "bias")
        if name not in stacked:
            total[weight] = torch.zeros_like(m.weight)
            if getattr(m, "bias", None) is not None:
                total[bias] = torch.zeros_like(m.bias)
            continue
        a, g = stacked[name]
        if isinstance(m, nn.Embedding):  # c_i g_p added into row k_p
            scaled = (g * factors[:, None, None]).reshape(-1, m.embedding_dim)
            total[weight] = torch.zeros_like(m.weight).index_add_(0, a.reshape(-1), scaled)
            continue
        # book-keeping: sum_i c_i G_i^T A_i is one matrix product, with the factors on the narrower side
        if m.in_features < m.out_features:
            total[weight] = g.reshape(-1, m.out_features).T @ (a * factors[:, None, None]).reshape(-1, m.in_features)
        else:
            total[weight] = (g * factors[:, None, None]).reshape(-1, m.out_features).T @ a.reshape(-1, m.in_features)
        if m.bias is not None:  # sum_i c_i sum_p g_ip
            total[bias] = factors @ (g[:, 0] if g.shape[1] == 1 else g.sum(dim=1))
    for name, g in g_other.items():
        total[name] = torch.tensordot(factors, g, dims=1)
    return {name: total[name] for name in trainable_names}, norms, losses  # the module's parameter order


def _largest(x: torch.Tensor) -> float:
    return float(x.abs().max()) if x.numel() else 0.0


def _positions(parts: list[torch.Tensor]) -> torch.Tensor:
    """The calls of one layer side by side on the position axis (no copy for a single call)."""
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def _weight_norm2(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """(B,) squared Frobenius norms of ``sum_p g_p a_p^T`` for ``a`` (B, P, in) and ``g`` (B, P, out)."""
    p, d_in, d_out = a.shape[1], a.shape[2], g.shape[2]
    if p == 1:
        return torch.linalg.vector_norm(a, dim=(1, 2)).square() * torch.linalg.vector_norm(g, dim=(1, 2)).square()
    if p * p * (d_in + d_out) <= d_in * d_out:  # two P x P Gram matrices
        return (torch.bmm(a, a.transpose(1, 2)) * torch.bmm(g, g.transpose(1, 2))).sum(dim=(1, 2))
    return torch.bmm(g.transpose(1, 2), a).pow(2).sum(dim=(1, 2))  # the per-example gradient itself


def _embedding_norm2(k: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """(B,) squared Frobenius norms of ``sum_p e_{k_p} g_p^T`` for indices ``k`` (B, P) and ``g`` (B, P, dim)."""
    if k.shape[1] == 1:
        return g.pow(2).sum(dim=(1, 2))
    same = (k[:, :, None] == k[:, None, :]).to(g.dtype)  # positions that read the same row
    return (same * torch.bmm(g, g.transpose(1, 2))).sum(dim=(1, 2))


def _zero_rows_where(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``x`` (B, P, d) with the positions where ``mask`` (B, P) holds set to zero."""
    return torch.where(mask[..., None], torch.zeros((), dtype=x.dtype), x)


def _zero_rows(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    mask = rows.reshape(-1, *([1] * (x.dim() - 1)))
    return torch.where(mask, torch.zeros((), dtype=x.dtype), x)
