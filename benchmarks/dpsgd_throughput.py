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

Measured 2026-11-23 on the 2-core CPU (load average < 1 at the start, nothing else running), torch 2.13,
opacus 1.6.0: ``python benchmarks/dpsgd_throughput.py --repeats 3 --threads 2``

    model    batch | dpsynth ex/s opacus ex/s ratio | dpsynth ex/cpu-s opacus ex/cpu-s ratio | dpsynth MB opacus MB
    mlp         64 |         4557        2275  2.00 |             2289            1143  2.00 |       44.9      56.2
    mlp        256 |         4862        2057  2.36 |             2433            1054  2.31 |       60.7     140.2
    mlp       1024 |         5244        1983  2.64 |             2635            1112  2.37 |       58.9     535.0
    wgan        64 |         5077        4808  1.06 |             2552            2412  1.06 |       35.1      54.7
    wgan       256 |         5237        2005  2.61 |             2731            1027  2.66 |       66.2     140.2
    wgan      1024 |         5976        2189  2.73 |             2991            1216  2.46 |       76.1     537.4
    wgan-gp     64 |          990        3659  0.27 |              499            1848  0.27 |      136.2      55.0  *
    wgan-gp    256 |         1379        2153  0.64 |              698            1097  0.64 |      139.5     193.9  *
    wgan-gp   1024 |         1529        2039  0.75 |              772            1126  0.69 |      179.7     537.1  *

The ``wgan`` rows are the like-for-like GAN comparison (the same critic step in both libraries). (*) Opacus' row
is the real term only (it cannot clip the penalty per example): not the same step. Absolute rates vary between
days on this virtual machine (the same command on 2026-11-22 gave 14.7k-15.6k MLP ex/s for dpsynth and 7.1k-8.6k
for Opacus, ratios 1.72 / 1.89 / 2.21); the ratios, measured in one interleaved run, are the comparison. An
earlier run on the shared machine (load average 8-14, ``--threads 1``) gave MLP ratios 1.24 / 1.84 / 2.82: small
batches suffer most from contention.
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


# ----------------------------------------------------------------------------- dpsynth
def dpsynth_runner(kind: str, b: int):
    from dpsynth.privacy import DPSGD, DPSGDConfig, PrivacyLedger, input_gradient

    model = mlp()
    x, y, fake = data(b)
    alpha = torch.rand(b, 1, generator=torch.Generator().manual_seed(2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ledger = PrivacyLedger(target_epsilon=math.inf, target_delta=1e-5)
    config = DPSGDConfig(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=1.0)
    engine = DPSGD(model, opt, config, ledger=ledger, phase="bench", max_steps=10**9,
                   generator=torch.Generator().manual_seed(0), n_rows=b)
    batches = engine.batches()

    def logistic(model_fn, xi, yi):
        return nn.functional.binary_cross_entropy_with_logits(model_fn(xi).squeeze(-1), yi)

    def critic_gp(model_fn, real, fk, a):
        mixed = a * real + (1 - a) * fk
        slope = input_gradient(model_fn, mixed)
        return -model_fn(real).sum() + 10.0 * ((slope.pow(2).sum() + 1e-12).sqrt() - 1.0) ** 2

    def critic_real(model_fn, real):
        return -model_fn(real).sum()

    def step():
        next(batches)
        if kind == "mlp":
            engine.step(logistic, (x, y))
        elif kind == "wgan":
            engine.step(critic_real, (x,), public_loss=lambda: model(fake).mean())
        else:
            engine.step(critic_gp, (x, fake, alpha), public_loss=lambda: model(fake).mean())

    return step


# ----------------------------------------------------------------------------- opacus
def opacus_runner(kind: str, b: int):
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = GradSampleModule(mlp())
    plain = mlp()  # hook-free twin, run on the wrapped model's parameters for the public fake term
    params = dict(model._module.named_parameters())
    x, y, fake = data(b)
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.01), noise_multiplier=1.0, max_grad_norm=1.0,
                      expected_batch_size=b, loss_reduction="mean")

    def step():
        opt.zero_grad(set_to_none=True)
        if kind == "mlp":
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(-1), y)
            loss.backward()
            opt.step()
            return
        # critic: the real term per example (Opacus cannot add the penalty to it: see the module docstring) ...
        (-model(x).mean()).backward()
        opt.pre_step()  # clip + noise into p.grad
        # ... plus the public fake term, unclipped, after privatisation (as dpsynth's public_loss does)
        fake_loss = torch.func.functional_call(plain, params, (fake,)).mean()
        for p, g in zip(params.values(), torch.autograd.grad(fake_loss, list(params.values()))):
            p.grad = p.grad + g
        opt.original_optimizer.step()

    return step


RUNNERS = {"dpsynth": dpsynth_runner, "opacus": opacus_runner}


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
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)  # the machine has 2 cores
    parser.add_argument("--examples", type=int, default=4096, help="examples per timing (per library, repeat)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    rows = []
    for kind in ("mlp", "wgan", "wgan-gp"):
        for b in args.batches:
            n_steps = max(3, args.examples // b)
            steppers = {lib: make(kind, b) for lib, make in RUNNERS.items()}
            wall: dict[str, list[float]] = {lib: [] for lib in RUNNERS}
            cpu: dict[str, list[float]] = {lib: [] for lib in RUNNERS}
            for _ in range(args.repeats):  # interleaved, so both libraries see the same machine load
                for lib, step in steppers.items():
                    w, c = time_steps(step, b, n_steps)
                    wall[lib].append(w)
                    cpu[lib].append(c)
            med = {lib: statistics.median(v) for lib, v in wall.items()}
            med_cpu = {lib: statistics.median(v) for lib, v in cpu.items()}
            mem = {lib: peak_memory(lib, kind, b, args.threads) for lib in RUNNERS}
            rows.append({"model": kind, "batch": b, **{f"{k}_ex_s": v for k, v in med.items()},
                         **{f"{k}_ex_cpu_s": v for k, v in med_cpu.items()},
                         **{f"{k}_peak_mb": v for k, v in mem.items()},
                         "ratio": med["dpsynth"] / med["opacus"], "ratio_cpu": med_cpu["dpsynth"] / med_cpu["opacus"]})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"torch {torch.__version__}, opacus 1.6.0, threads={args.threads}, median of {args.repeats} interleaved "
          "repeats; ex/s = examples per wall-clock second, ex/cpu-s = per CPU-second of the process (robust to "
          "other jobs on the shared machine); MB = peak RSS above set-up")
    print(f"{'model':8} {'batch':>5} | {'dpsynth ex/s':>12} {'opacus ex/s':>11} {'ratio':>5} | "
          f"{'dpsynth ex/cpu-s':>16} {'opacus ex/cpu-s':>15} {'ratio':>5} | {'dpsynth MB':>10} {'opacus MB':>9}")
    for r in rows:
        note = "  *" if r["model"] == "wgan-gp" else ""
        print(f"{r['model']:8} {r['batch']:>5} | {r['dpsynth_ex_s']:>12.0f} {r['opacus_ex_s']:>11.0f} "
              f"{r['ratio']:>5.2f} | {r['dpsynth_ex_cpu_s']:>16.0f} {r['opacus_ex_cpu_s']:>15.0f} "
              f"{r['ratio_cpu']:>5.2f} | {r['dpsynth_peak_mb']:>10.1f} {r['opacus_peak_mb']:>9.1f}{note}")
    print("wgan: both libraries clip the critic's real term per example and add the public fake term unclipped "
          "(the same step). * wgan-gp: dpsynth also clips the gradient penalty per example (double backward inside "
          "vmap); Opacus cannot put the penalty in its per-sample gradients (its hooks fail with 'IndexError: pop "
          "from empty list' on the penalty's double backward), so its row is the wgan step: not the same work.")


if __name__ == "__main__":
    main()
