"""Ghost clipping with book-keeping (issue 23) against the exact per-example path: the same per-example norms and
the same clipped sum, to float tolerance, on random models (several calls per example, sequences, the Gram and the
materialised branches, embeddings, non-linear parameters, frozen and shared layers, non-finite examples); what it
does not cover falls back or is refused; DP-SGD takes the same step either way."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dpsynth.errors import InputError
from dpsynth.privacy.dpsgd import DPSGD, DPSGDConfig
from dpsynth.privacy.ghost import GhostClipper, GhostUnsupported, ghost_applicable, ghost_clipped_sum, rowwise
from dpsynth.privacy.ledger import PrivacyLedger
from dpsynth.privacy.per_example import clipped_sum, input_gradient


def _bce(model_fn, x, y):
    return nn.functional.binary_cross_entropy_with_logits(model_fn(x).reshape(()), y)


def _critic(model_fn, real, fake):  # two calls of every layer per example, as a WGAN critic's loss
    return model_fn(fake).mean() - model_fn(real).mean()


def _assert_same(module, loss, batch, max_norm):
    exact, exact_norms, exact_losses = clipped_sum(module, loss, batch, max_norm)
    ghost, ghost_norms, ghost_losses = ghost_clipped_sum(module, loss, batch, max_norm)
    assert list(ghost) == list(exact)
    finite = torch.isfinite(exact_norms)
    assert torch.equal(finite, torch.isfinite(ghost_norms))
    torch.testing.assert_close(ghost_norms[finite], exact_norms[finite], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ghost_losses, exact_losses, rtol=1e-5, atol=1e-6, equal_nan=True)
    for name in exact:
        torch.testing.assert_close(ghost[name], exact[name], rtol=1e-4, atol=1e-5)
    return exact_norms


@pytest.mark.parametrize("seed", range(6))
def test_ghost_equals_exact_on_random_mlps(seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    widths = torch.randint(2, 40, (4,), generator=gen).tolist()
    layers: list[nn.Module] = [nn.Linear(widths[0], widths[1], bias=bool(seed % 2)), nn.ReLU(),
                               nn.LayerNorm(widths[1]), nn.Linear(widths[1], widths[2]), nn.Tanh(),
                               nn.Linear(widths[2], 1)]
    module = nn.Sequential(*layers)
    if seed % 3 == 0:
        module[3].requires_grad_(False)  # a frozen layer: neither clipped nor summed
    n = int(torch.randint(5, 60, (1,), generator=gen))
    x = torch.randn(n, widths[0], generator=gen) * 3
    y = (torch.rand(n, generator=gen) > 0.5).float()
    norms = _assert_same(module, _bce, (x, y), max_norm=float(torch.rand(1, generator=gen)) + 0.05)
    assert (norms > 0).all()


@pytest.mark.parametrize("width,positions", [(64, 3), (4, 12), (16, 1)])
def test_ghost_equals_exact_for_sequences_and_repeated_calls(width, positions):
    """Positions of a sequence and several calls per example: the Gram branch (P^2 (in + out) <= in out), the
    materialised branch (P = 12 on a 4 x 4 layer) and P = 1."""
    torch.manual_seed(width)
    module = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, 2))
    real = torch.randn(20, positions, width)
    fake = torch.randn(20, positions, width)
    _assert_same(module, _critic, (real, fake), max_norm=0.3)


class _Tokens(nn.Module):
    """Embedded categorical codes (some repeated within an example, some at the padding row), pooled, then an MLP;
    a second embedding looked up once per example."""

    def __init__(self, vocab: int, dim: int, padding_idx: int | None, **options):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=padding_idx)
        self.extra = nn.Embedding(5, dim, **options)
        self.head = nn.Sequential(nn.Linear(dim, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, codes, one):
        return self.head(self.embed(codes).mean(dim=-2) + self.extra(one)).reshape(())


def _token_loss(model_fn, codes, one, y):
    return nn.functional.binary_cross_entropy_with_logits(model_fn(codes, one), y)


@pytest.mark.parametrize("vocab,positions,padding_idx", [(7, 6, 0), (50, 1, None), (3, 9, 2)])
def test_ghost_equals_exact_for_embeddings(vocab, positions, padding_idx):
    """Repeated rows within an example (vocab 3, 9 positions: the equal-index Gram terms), one position, and the
    padding row, which takes no gradient."""
    torch.manual_seed(vocab)
    module = _Tokens(vocab, 6, padding_idx)
    n = 25
    codes = torch.randint(0, vocab, (n, positions))
    one = torch.randint(0, 5, (n,))
    y = (torch.rand(n) > 0.5).float()
    _assert_same(module, _token_loss, (codes, one, y), max_norm=0.2)
    clipper_layers = GhostClipper(module).layers
    assert {"embed", "extra"} <= set(clipper_layers)  # both taken by the ghost identities


def test_embeddings_the_identities_do_not_cover_take_the_exact_way():
    torch.manual_seed(0)
    module = _Tokens(7, 6, None, scale_grad_by_freq=True)
    assert "extra" not in GhostClipper(module).layers
    codes, one, y = torch.randint(0, 7, (10, 4)), torch.randint(0, 5, (10,)), torch.ones(10)
    _assert_same(module, _token_loss, (codes, one, y), max_norm=0.5)


def test_a_non_finite_example_contributes_zero_and_a_bare_parameter_is_exact():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
            self.scale = nn.Parameter(torch.tensor(1.5))

        def forward(self, x):
            return self.body(x) * self.scale

    torch.manual_seed(1)
    x = torch.randn(12, 5)
    x[3, 0] = float("inf")
    y = torch.ones(12)
    norms = _assert_same(Scaled(), _bce, (x, y), max_norm=1.0)
    assert not torch.isfinite(norms[3]) and torch.isfinite(norms[torch.arange(12) != 3]).all()


def test_shared_weights_go_the_exact_way_inside_the_ghost_pass():
    torch.manual_seed(2)
    first, second = nn.Linear(6, 6), nn.Linear(6, 1)
    module = nn.Sequential(first, nn.ReLU(), first, nn.ReLU(), second)  # `first` used twice in one module
    _assert_same(module, _bce, (torch.randn(10, 6), torch.ones(10)), max_norm=0.5)


def test_a_gradient_penalty_is_not_ghost_clipped():
    module = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def penalty(model_fn, x):
        return (input_gradient(model_fn, x).norm() - 1) ** 2

    with pytest.raises(GhostUnsupported, match="input gradient"):
        ghost_clipped_sum(module, penalty, (torch.randn(6, 4),), 1.0)
    with pytest.raises(GhostUnsupported, match="no trainable nn.Linear"):
        ghost_clipped_sum(nn.Sequential(nn.LayerNorm(4)), lambda f, x: f(x).sum(), (torch.randn(3, 4),), 1.0)


def test_ghost_applies_where_linear_and_embedding_layers_hold_most_parameters():
    assert ghost_applicable(nn.Sequential(nn.Linear(10, 10), nn.LayerNorm(10)))
    assert ghost_applicable(nn.Sequential(nn.Embedding(1000, 16), nn.Linear(16, 1)))
    assert not ghost_applicable(nn.Sequential(nn.Embedding(1000, 16, max_norm=1.0), nn.Linear(16, 1)))
    assert not ghost_applicable(nn.Sequential(nn.Conv1d(4, 64, 9), nn.Flatten(), nn.Linear(64, 1)))


def _dpsgd(module, method, seed=0):
    ledger = PrivacyLedger(target_epsilon=10.0, target_delta=1e-5)
    config = DPSGDConfig(noise_multiplier=1.0, max_grad_norm=0.5, sample_rate=0.2, per_example_method=method)
    return DPSGD(module, torch.optim.SGD(module.parameters(), lr=0.1), config, ledger=ledger, phase="t",
                 max_steps=3, generator=torch.Generator().manual_seed(seed), n_rows=100)


def test_dpsgd_takes_the_same_noisy_step_with_ghost_and_exact_clipping():
    torch.manual_seed(3)
    base = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 1))
    x, y = torch.randn(100, 7), (torch.rand(100) > 0.5).float()
    results = {}
    for method in ("exact", "ghost"):
        module = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 1))
        module.load_state_dict(base.state_dict())
        engine = _dpsgd(module, method)
        assert engine.per_example_method == method
        for idx in engine.batches():
            engine.step(_bce, (x[idx], y[idx]))
        results[method] = [p.detach().clone() for p in module.parameters()]
    for a, b in zip(results["exact"], results["ghost"]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_auto_falls_back_to_exact_for_a_gradient_penalty_and_forced_ghost_refuses():
    module = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def penalty(model_fn, x):
        return (input_gradient(model_fn, x).norm() - 1) ** 2

    x = torch.randn(100, 4)
    engine = _dpsgd(module, "auto")
    assert engine.per_example_method == "ghost"
    idx = next(iter(engine.batches()))
    engine.step(penalty, (x[idx],))
    assert engine.per_example_method == "exact"
    forced = _dpsgd(nn.Sequential(nn.Linear(4, 1)), "ghost")
    idx = next(iter(forced.batches()))
    with pytest.raises(InputError, match="per_example_method='ghost' cannot clip this model"):
        forced.step(penalty, (x[idx],))
    with pytest.raises(InputError, match="per_example_method must be one of"):
        DPSGDConfig(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=0.1, per_example_method="fast")


def test_a_block_can_force_the_method_of_every_auto_engine():
    from dpsynth.privacy.dpsgd import per_example_method

    with per_example_method("exact"):
        assert _dpsgd(nn.Sequential(nn.Linear(3, 1)), "auto").per_example_method == "exact"
        assert _dpsgd(nn.Sequential(nn.Linear(3, 1)), "ghost").per_example_method == "ghost"  # explicit wins
    assert _dpsgd(nn.Sequential(nn.Linear(3, 1)), "auto").per_example_method == "ghost"
    with pytest.raises(InputError, match="per_example_method must be one of"):
        with per_example_method("fastest"):
            pass


def test_blocks_add_up_to_the_whole_batch():
    torch.manual_seed(4)
    module = nn.Sequential(nn.Linear(5, 9), nn.ReLU(), nn.LayerNorm(9), nn.Linear(9, 1))
    from dpsynth.privacy.ghost import GhostClipper

    x, y = torch.randn(23, 5), torch.ones(23)
    whole, whole_norms, _ = GhostClipper(module)(_bce, (x, y), 0.4, block=None)
    parts, part_norms, _ = GhostClipper(module)(_bce, (x, y), 0.4, block=5)
    torch.testing.assert_close(part_norms, whole_norms)
    for name in whole:
        torch.testing.assert_close(parts[name], whole[name], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- row-wise losses (one batched call)
@rowwise
def _rowwise_bce(model_fn, x, y):
    return nn.functional.binary_cross_entropy_with_logits(model_fn(x).squeeze(-1), y, reduction="none")


@rowwise
def _rowwise_critic(model_fn, real, fake):  # a sequence per example, two calls of every layer
    return model_fn(fake).mean(dim=(-2, -1)) - model_fn(real).mean(dim=(-2, -1))


@pytest.mark.parametrize("bias", [True, False])
def test_a_rowwise_loss_runs_once_on_the_batch_and_equals_the_exact_path(bias, monkeypatch):
    torch.manual_seed(3)
    module = nn.Sequential(nn.Linear(9, 16, bias=bias), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
    x, y = torch.randn(70, 9) * 2, (torch.rand(70) > 0.5).float()
    clipper = GhostClipper(module)
    clipper(_rowwise_bce, (x[:10], y[:10]), 0.5)  # the first batch of this shape is checked against vmap ...
    import dpsynth.privacy.ghost as ghost_mod

    def no_vmap(*args, **kwargs):
        raise AssertionError("a checked rowwise loss must not be vmapped")

    monkeypatch.setattr(ghost_mod, "vmap", no_vmap)  # ... later batches run as one call
    ghost, norms, losses = clipper(_rowwise_bce, (x, y), 0.5)
    exact, exact_norms, exact_losses = clipped_sum(module, _rowwise_bce, (x, y), 0.5)
    torch.testing.assert_close(norms, exact_norms, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(losses, exact_losses, rtol=1e-5, atol=1e-6)
    for name in exact:
        torch.testing.assert_close(ghost[name], exact[name], rtol=1e-4, atol=1e-5)


def test_a_rowwise_loss_with_sequences_and_several_calls_equals_the_exact_path():
    torch.manual_seed(4)
    module = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 2))
    real, fake = torch.randn(30, 12, 4), torch.randn(30, 12, 4)
    _assert_same(module, _rowwise_critic, (real, fake), max_norm=0.3)


@pytest.mark.parametrize("mixing", ["batch mean", "softmax over the batch", "random draw", "not one per row"])
def test_a_loss_wrongly_marked_rowwise_runs_vmapped_and_stays_exact(mixing):
    """Each loss below is a correct per-example loss (the exact path and vmap compute it right) but not row-wise:
    called on a batch it mixes rows, draws different noise, or returns one number; the check refuses the mark
    before any of its gradients is used and the clipped sum is the exact path's. Nothing is raised or warned (the
    check reads private rows). With the check removed the batch-mixing cases give wrong sums."""
    def loss(model_fn, x, y):
        z = model_fn(x)  # two logits per example
        if mixing == "batch mean":  # one example: its own feature mean; a batch: the column means
            return nn.functional.binary_cross_entropy_with_logits(z[..., 0] - x.mean(dim=0).sum(), y,
                                                                  reduction="none")
        if mixing == "softmax over the batch":  # one example: over its two logits; a batch: over the rows
            return -torch.log_softmax(z, dim=0)[..., 0] * y
        if mixing == "not one per row":
            return nn.functional.binary_cross_entropy_with_logits(z[..., 0], y)
        return nn.functional.binary_cross_entropy_with_logits(z[..., 0] + 0.1 * torch.randn(z[..., 0].shape), y,
                                                              reduction="none")

    torch.manual_seed(5)
    module = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    x, y = torch.randn(20, 6), (torch.rand(20) > 0.5).float()
    clipper = GhostClipper(module)
    clipper(rowwise(loss), (x[:1], y[:1]), 1.0)  # one row cannot show mixing: run vmapped, nothing decided
    assert not clipper.rowwise_refused
    ghost, norms, _ = clipper(loss, (x, y), 1.0)
    assert len(clipper.rowwise_refused) == 1
    if mixing != "random draw":  # the noise inside differs between the two calls
        exact, exact_norms, _ = clipped_sum(module, loss, (x, y), 1.0)
        torch.testing.assert_close(norms, exact_norms, rtol=1e-4, atol=1e-5)
        for name in exact:
            torch.testing.assert_close(ghost[name], exact[name], rtol=1e-4, atol=1e-5)


def test_a_rowwise_mark_is_ignored_where_the_model_has_parameters_outside_linear_layers():
    """LayerNorm's per-example copies need vmap: the mark changes nothing there (and nothing is refused)."""
    torch.manual_seed(6)
    module = nn.Sequential(nn.Linear(5, 8), nn.LayerNorm(8), nn.Linear(8, 1))
    _assert_same(module, _rowwise_bce, (torch.randn(15, 5), (torch.rand(15) > 0.5).float()), max_norm=0.4)
