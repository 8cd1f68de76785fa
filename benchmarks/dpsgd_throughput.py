"""DP-SGD training throughput and peak memory: dpsynth vs Opacus 1.6 on the same models, in the same run.

Not a test: prints a table. Models: (a) MLP 106 -> 256 -> 256 -> 1 with a logistic loss; (b) ``wgan``: a WGAN
critic step (same MLP as critic): real term clipped per example, public fake term added unclipped — the same step
in both libraries; (c) ``wgan-gp``: (b) plus the gradient penalty clipped per example together with the real term.

    python benchmarks/dpsgd_throughput.py [--batches 64 256 1024] [--repeats 5] [--threads 2]

Both libraries do per-example clipping + Gaussian noise + an SGD step on identical models and data. Batches are
fixed-size (q = 1 over a pool of B rows for dpsynth, a fixed tensor for Opacus) so both process exactly B examples
per step. Runs of the two libraries are interleaved and the median over repeats is reported, because the machine
is shared. Peak memory is the peak RSS above the RSS after set-up over 4 steps, in a fresh subprocess per (library,
model, batch) (Linux: /proc/self/clear_refs resets VmHWM).
Opacus computes per-sample gradients with layer hooks in one backward pass; a loss that contains an input
gradient (the WGAN-GP penalty) cannot be clipped per example that way, so Opacus' row for (c) is step (b) — a
cheaper and weaker step (marked *).

Measured 2026-11-27 on the idle 2-core VM, torch 2.13, opacus 1.6.0 (examples per second; the losses below are
marked row-wise, so ghost clipping calls them once per batch):
``python benchmarks/dpsgd_throughput.py --batches 64 256 1024 4096 --repeats 5 --threads 2``

    model    batch | nonprivate  dpsynth-ghost  dpsynth-exact  opacus-ghost | ghost/nonpriv  ghost/opacus-ghost
    mlp         64 |      73179          34363           7251         20841 |          0.47                1.65
    mlp        256 |     155178          90193           6725         56850 |          0.58                1.59
    mlp       1024 |     258800         188514           9289        111931 |          0.73                1.68
    mlp       4096 |     283015         230401          13242        143627 |          0.81                1.60
    wgan       256 |      84728          58591           7425           n/a |          0.69
    denoiser   256 |     189149         126523          16171         77032 |          0.67                1.64

Absolute rates move by up to 30% between runs on this virtual machine; the ratios come from one interleaved run.
Before row-wise losses (vmapped ghost pass) the MLP ratios to Opacus' ghost mode were 1.32 / 1.41 / 1.50 / 1.38.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from dpsynth.privacy import rowwise

D_IN = 106


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(D_IN, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))


def data(b: int):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(b, D_IN, generator=g)
    labels = (torch.rand(b, generator=g) < 0.5).float()
    noise = torch.randn(b, D_IN, generator=g)
    return x, labels, noise


# ----------------------------------------------------------------------------- models and losses
def vae() -> nn.Module:
    """DP-TLDM's VAE as the model builds it for an Adult-sized encoding: 6 numeric columns (tanh spans) and 9
    categorical ones (softmax spans), 106 encoded dimensions, latent 16, two hidden layers of 256."""
    from dpsynth.models.networks.vae import TabularVAE

    torch.manual_seed(0)
    spans, start = [], 0
    for width, kind in [(1, "tanh")] * 6 + [(w, "softmax") for w in (9, 16, 7, 15, 6, 5, 2, 41, 1)]:
        spans.append((start, start + width, kind))
        start += width
    return TabularVAE(spans, latent_dim=16, hidden=(256, 256))


def denoiser() -> nn.Module:
    """DP-TLDM's denoiser: latent 16, two hidden layers of 128."""
    from dpsynth.models.networks.diffusion import Denoiser

    torch.manual_seed(0)
    return Denoiser(16, hidden=(128, 128))


BUILD = {"mlp": mlp, "wgan": mlp, "wgan-gp": mlp, "vae": vae, "denoiser": denoiser}


def batch_for(kind: str, b: int) -> dict[str, torch.Tensor]:
    x, y, fake = data(b)
    g = torch.Generator().manual_seed(3)
    if kind == "vae":
        model = vae()
        rows = torch.zeros(b, model.data_dim)
        for s, e, act in model.spans:
            if act == "softmax":
                rows[torch.arange(b), s + torch.randint(0, e - s, (b,), generator=g)] = 1.0
            else:
                rows[:, s:e] = torch.rand(b, e - s, generator=g) * 2 - 1
        return {"x": rows, "noise": torch.randn(b, 16, generator=g)}
    if kind == "denoiser":
        return {"z0": torch.randn(b, 16, generator=g), "t": torch.rand(b, generator=g),
                "ab": torch.rand(b, generator=g) * 0.98 + 0.01, "eps": torch.randn(b, 16, generator=g)}
    return {"x": x, "y": y, "fake": fake, "alpha": torch.rand(b, 1, generator=torch.Generator().manual_seed(2))}


# The per-example losses are written row-wise (reductions over the last axes only) and marked so
# (dpsynth.privacy.rowwise): ghost clipping then runs them once on the batch, after checking the first batch
# against the vmapped per-example call. The exact path vmaps them as before.
@rowwise
def logistic(model_fn, xi, yi):
    return nn.functional.binary_cross_entropy_with_logits(model_fn(xi).squeeze(-1), yi, reduction="none")


def critic_gp(model_fn, real, fk, a):
    from dpsynth.privacy import input_gradient

    mixed = a * real + (1 - a) * fk
    slope = input_gradient(model_fn, mixed)
    return -model_fn(real).sum() + 10.0 * ((slope.pow(2).sum() + 1e-12).sqrt() - 1.0) ** 2


@rowwise
def critic_real(model_fn, real):
    return -model_fn(real).sum(-1)


@rowwise
def vae_loss(model_fn, x, noise):
    return model_fn(x, noise)


@rowwise
def diffusion_loss(model_fn, z0, t, ab, eps):
    a = ab.unsqueeze(-1)
    return ((model_fn(a.sqrt() * z0 + (1 - a).sqrt() * eps, t) - eps) ** 2).sum(-1)


def per_example(kind: str, d: dict[str, torch.Tensor]):
    """(per-example loss, batch tensors) of one model as dpsynth's models write them."""
    return {"mlp": (logistic, (d["x"], d["y"]) if "y" in d else ()),
            "wgan": (critic_real, (d.get("x"),)),
            "wgan-gp": (critic_gp, (d.get("x"), d.get("fake"), d.get("alpha"))),
            "vae": (vae_loss, (d.get("x"), d.get("noise"))),
            "denoiser": (diffusion_loss, (d.get("z0"), d.get("t"), d.get("ab"), d.get("eps")))}[kind]


def batch_loss(kind: str, model: nn.Module, d: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B,) per-example losses in one batched forward (the non-private step and Opacus)."""
    if kind == "mlp":
        return nn.functional.binary_cross_entropy_with_logits(model(d["x"]).squeeze(-1), d["y"], reduction="none")
    if kind in ("wgan", "wgan-gp"):
        return -model(d["x"]).squeeze(-1)
    if kind == "vae":
        return model(d["x"], d["noise"])
    a = d["ab"].unsqueeze(-1)
    return ((model(a.sqrt() * d["z0"] + (1 - a).sqrt() * d["eps"], d["t"]) - d["eps"]) ** 2).sum(-1)


# ----------------------------------------------------------------------------- dpsynth
def dpsynth_runner(kind: str, b: int, method: str):
    from dpsynth.privacy import DPSGD, DPSGDConfig, PrivacyLedger

    model = BUILD[kind]()
    d = batch_for(kind, b)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ledger = PrivacyLedger(target_epsilon=math.inf, target_delta=1e-5)
    config = DPSGDConfig(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=1.0, per_example_method=method)
    engine = DPSGD(model, opt, config, ledger=ledger, phase="bench", max_steps=10**9,
                   generator=torch.Generator().manual_seed(0), n_rows=b)
    batches = engine.batches()
    loss, tensors = per_example(kind, d)
    public = (lambda: model(d["fake"]).mean()) if kind in ("wgan", "wgan-gp") else None

    def step():
        next(batches)
        engine.step(loss, tensors, public_loss=public)

    return step


def nonprivate_runner(kind: str, b: int):
    """The speed limit: an ordinary batched forward, backward and SGD step (no per-example work, no noise)."""
    model = BUILD[kind]()
    d = batch_for(kind, b)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = batch_loss(kind, model, d).mean()
        if kind in ("wgan", "wgan-gp"):
            loss = loss + model(d["fake"]).mean()
        loss.backward()
        opt.step()

    return step


# ----------------------------------------------------------------------------- opacus
def opacus_runner(kind: str, b: int):
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = GradSampleModule(BUILD[kind]())
    plain = BUILD[kind]()  # hook-free twin, run on the wrapped model's parameters for the public fake term
    params = dict(model._module.named_parameters())
    d = batch_for(kind, b)
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.01), noise_multiplier=1.0, max_grad_norm=1.0,
                      expected_batch_size=b, loss_reduction="mean")

    def step():
        opt.zero_grad(set_to_none=True)
        if kind not in ("wgan", "wgan-gp"):
            batch_loss(kind, model, d).mean().backward()
            opt.step()
            return
        # critic: the real term per example (Opacus cannot add the penalty to it: see the module docstring) ...
        (-model(d["x"]).mean()).backward()
        opt.pre_step()  # clip + noise into p.grad
        # ... plus the public fake term, unclipped, after privatisation (as dpsynth's public_loss does)
        fake_loss = torch.func.functional_call(plain, params, (d["fake"],)).mean()
        for p, g in zip(params.values(), torch.autograd.grad(fake_loss, list(params.values()))):
            p.grad = p.grad + g
        opt.original_optimizer.step()

    return step


class _PerRow(nn.Module):
    """A criterion for Opacus' ghost mode whose 'output' already is the per-row loss (Opacus sets its
    ``reduction``)."""

    def forward(self, output, target):
        return output


def opacus_ghost_runner(kind: str, b: int):
    """Opacus 1.6's fastest mode: ghost clipping (GradSampleModuleFastGradientClipping, two backward passes)."""
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    if kind in ("wgan", "wgan-gp"):
        raise NotImplementedError("a critic with a public term does not fit Opacus' ghost loss wrapper")
    model = GradSampleModuleFastGradientClipping(BUILD[kind](), max_grad_norm=1.0, use_ghost_clipping=True)
    d = batch_for(kind, b)
    opt = DPOptimizerFastGradientClipping(torch.optim.SGD(model.parameters(), lr=0.01), noise_multiplier=1.0,
                                          max_grad_norm=1.0, expected_batch_size=b, loss_reduction="mean")
    criterion = DPLossFastGradientClipping(model, opt, _PerRow(), loss_reduction="mean")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = criterion(batch_loss(kind, model, d), None)
        loss.backward()
        opt.step()

    return step


RUNNERS = {
    "nonprivate": nonprivate_runner,
    "dpsynth-ghost": lambda kind, b: dpsynth_runner(kind, b, "ghost"),
    "dpsynth-exact": lambda kind, b: dpsynth_runner(kind, b, "exact"),
    "opacus-ghost": opacus_ghost_runner,
    "opacus-hooks": opacus_runner,
}


def time_steps(step, b: int, n_steps: int) -> tuple[float, float]:
    """(examples per wall-clock second, examples per CPU-second of this process)."""
    step()  # warm-up
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n_steps):
        step()
    return b * n_steps / (time.perf_counter() - w0), b * n_steps / (time.process_time() - c0)


def peak_memory(lib: str, kind: str, b: int, threads: int) -> float:
    """Peak RSS above the RSS after model set-up (MB) over 4 steps, in a fresh subprocess (Linux VmHWM reset)."""
    here = str(Path(__file__).parent)
    code = (
        f"import sys, torch; sys.path.insert(0, {here!r}); import dpsgd_throughput as m; "
        f"torch.set_num_threads({threads}); s = m.RUNNERS[{lib!r}]({kind!r}, {b}); "
        "rss = lambda key: int([l for l in open('/proc/self/status') if l.startswith(key)][0].split()[1]); "
        "open('/proc/self/clear_refs', 'w').write('5'); base = rss('VmRSS:'); [s() for _ in range(4)]; "
        "print((rss('VmHWM:') - base) / 1024)"
    )
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=False)
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--models", nargs="+", default=["mlp", "wgan", "vae", "denoiser", "wgan-gp"],
                        choices=sorted(BUILD))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)  # the machine has 2 cores
    parser.add_argument("--examples", type=int, default=8192, help="examples per timing (per library, repeat)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    rows = []
    for kind in args.models:
        for b in args.batches:
            n_steps = max(3, args.examples // b)
            steppers = {}
            for lib, make in RUNNERS.items():
                try:
                    steppers[lib] = make(kind, b)
                    steppers[lib]()  # a mode that cannot run this model fails here, not in the timing
                except Exception as exc:  # noqa: BLE001 - reported as n/a with its reason
                    print(f"# {lib} on {kind}: n/a ({type(exc).__name__}: {str(exc).splitlines()[0][:80]})",
                          flush=True)
                    steppers.pop(lib, None)
            wall: dict[str, list[float]] = {lib: [] for lib in steppers}
            for _ in range(args.repeats):  # interleaved, so every mode sees the same machine load
                for lib, step in steppers.items():
                    wall[lib].append(time_steps(step, b, n_steps)[0])
            row = {"model": kind, "batch": b}
            for lib in RUNNERS:
                row[lib] = statistics.median(wall[lib]) if lib in wall else float("nan")
            if not args.no_memory:
                for lib in ("dpsynth-ghost", "dpsynth-exact", "opacus-ghost"):
                    row[f"{lib} MB"] = peak_memory(lib, kind, b, args.threads) if lib in steppers else float("nan")
            rows.append(row)
            print(row, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"\ntorch {torch.__version__}, threads={args.threads}, median of {args.repeats} interleaved repeats; "
          "examples per wall-clock second; MB = peak RSS above set-up")
    head = ["model", "batch", *RUNNERS, "ghost/nonpriv", "ghost/opacus-ghost"]
    if not args.no_memory:
        head += ["dpsynth-ghost MB", "dpsynth-exact MB", "opacus-ghost MB"]
    print(" | ".join(head))
    for r in rows:
        cells = [r["model"], str(r["batch"]), *(f"{r[lib]:.0f}" for lib in RUNNERS),
                 f"{r['dpsynth-ghost'] / r['nonprivate']:.2f}", f"{r['dpsynth-ghost'] / r['opacus-ghost']:.2f}"]
        if not args.no_memory:
            cells += [f"{r[k]:.1f}" for k in ("dpsynth-ghost MB", "dpsynth-exact MB", "opacus-ghost MB")]
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
