"""The benchmark spec (issue 22): a YAML file naming a grid of models x datasets x epsilons x deltas x seeds, the
metrics to record and the limits of each run; validated before anything runs, every error naming its field.

```yaml
name: adult-quick                 # free text, shown in the report
models:                           # a name, or {name, params, label}
  - marginals
  - name: dp-tldm
    params: {epochs: 5}
    label: dp-tldm-5ep            # how the report calls it (default: the name, or name+params)
datasets:                         # a registry name, or {name, path, target}
  - adult
  - {name: my-table, path: data/my.csv, target: income}
epsilons: [1, inf]                # inf: the model's non-private mode (non-private models run at inf only)
deltas: [1.0e-5]
seeds: [0, 1, 2]
schema: public                    # public: the shipped (or inferred, taken as public) schema; none: DP discovery
dtypes: public                    # with schema none: private reads every cell as text, as `dpsynth fit FILE.csv`
declare_target: false             # with schema none: true tells the fit the dataset's target (`dpsynth fit --target`)
noise: numpy                      # secure: the secure samplers, as `dpsynth fit --noise secure` (dpsynth's DP models)
rows: 0                           # 0: every training row; n: the first n of the (seeded) shuffled training split
metrics: [similarity, unsupervised, ml_efficacy]    # groups of dpsynth.evaluate
eval_seeds: [0]                   # model seeds of the ML-efficacy classifiers
ml_models: [xgb]                  # ML-efficacy classifiers (default all: dt, rf, lr, mlp, xgb)
risk: default                     # privacy attacks on each release: false (default), default, or attack names
limits: {time_s: 3600, memory_gb: 8}
peers: {smartnoise: /opt/venv-sn/bin/python}      # peer libraries' interpreters (models sn-aim, sdv-ctgan, ...)
```

A *run* is one cell of the grid; its key is a hash of everything that decides its result (model, parameters,
dataset, epsilon, delta, seed, schema mode, dtypes, rows, metrics, evaluation seeds and classifiers, attacks,
declared target, noise, dpsynth's version),
so a results file knows which runs of a spec are done, and a changed spec or a new dpsynth version runs again.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dpsynth.errors import InputError

__all__ = ["BenchSpec", "Run", "load_spec", "parse_spec"]

_TOP = {"name", "models", "datasets", "epsilons", "deltas", "seeds", "schema", "rows", "metrics", "eval_seeds",
        "risk", "limits", "dtypes", "ml_models", "peers", "declare_target", "noise"}
DEFAULT_METRICS = ("similarity", "unsupervised", "ml_efficacy")
DEFAULT_LIMITS = {"time_s": 3600.0, "memory_gb": 8.0}


@dataclass(frozen=True)
class Run:
    """One cell of the grid (everything a worker needs; plain data, JSON-able)."""

    model: str
    label: str
    params: dict[str, Any]
    dataset: str
    path: str | None
    target: str | None
    epsilon: float
    delta: float
    seed: int
    schema: str
    dtypes: str
    rows: int
    metrics: tuple[str, ...]
    eval_seeds: tuple[int, ...]
    risk: tuple[str, ...]
    version: str
    ml_models: tuple[str, ...] = ()  # empty: every ML-efficacy classifier
    peer_python: str | None = None  # a peer library's interpreter (dpsynth.bench.peers)
    declare_target: bool = False  # schema none: the fit is told the target (``fit(..., target=...)``)
    noise: str = "numpy"  # ``fit(..., noise=...)``: "secure" draws the noise with OpenDP

    @property
    def key(self) -> str:
        fields = asdict(self)
        fields.pop("label")  # a display name: renaming a model does not make its runs new
        # defaults: keys recorded before these fields existed still match
        for name in ("ml_models", "peer_python", "declare_target"):
            if not fields[name]:
                fields.pop(name)
        if fields["noise"] == "numpy":
            fields.pop("noise")
        fields["epsilon"] = "inf" if math.isinf(self.epsilon) else self.epsilon
        blob = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["epsilon"] = "inf" if math.isinf(self.epsilon) else self.epsilon
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        data = dict(data)
        data["epsilon"] = float(data["epsilon"])
        for name in ("metrics", "eval_seeds", "risk", "ml_models"):
            data[name] = tuple(data.get(name, ()))
        return cls(**data)


@dataclass
class BenchSpec:
    name: str
    runs: list[Run]
    limits: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    #: cells left out of the grid: a non-private model (``supports_dp = False``, or a non-private peer) at a finite
    #: epsilon, which it would refuse; the grid of every model at ``epsilons: [1, inf]`` runs the baselines once
    non_private_left_out: int = 0


def load_spec(path: str | Path) -> BenchSpec:
    """Read and validate a YAML (or JSON) spec file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise InputError(f"Benchmark spec {path} does not exist.")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise InputError(f"Benchmark spec {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    return parse_spec(data, base=path.parent)


def _list(data: dict, name: str, default=None) -> list:
    value = data.get(name, default)
    if value is None:
        raise InputError(f"spec.{name} is missing.")
    if not isinstance(value, list) or not value:
        raise InputError(f"spec.{name} must be a non-empty list. Found {value!r}.")
    return value


def _number(value, where: str, *, positive: bool = True, allow_inf: bool = False) -> float:
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity") and allow_inf:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number{' or inf' if allow_inf else ''}. Found {value!r}.")
    value = float(value)
    if math.isnan(value) or (positive and not value > 0) or (math.isinf(value) and not allow_inf):
        raise InputError(f"{where} must be {'> 0' if positive else 'finite'}. Found {value!r}.")
    return value


def _entry(entry, where: str, what: str, allowed: tuple[str, ...]) -> dict:
    """One list entry of the spec as a mapping: a bare name, or a mapping with 'name' and only ``allowed`` keys."""
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, dict) or "name" not in entry:
        raise InputError(f"{where} must be a {what} name or a mapping with 'name'. Found {entry!r}.")
    extra = set(entry) - set(allowed)
    if extra:
        raise InputError(f"{where} has unknown field(s) {', '.join(sorted(extra))}; allowed: {', '.join(allowed)}.")
    return entry


def _models(entries: list, peers: dict[str, str]) -> list[tuple[str, str, dict]]:
    from dpsynth.bench.peers import PEERS
    from dpsynth.models import available_models, get_model_class

    known = set(available_models())
    out = []
    for i, entry in enumerate(entries):
        where = f"spec.models[{i}]"
        entry = _entry(entry, where, "model", ("name", "params", "label"))
        name = entry["name"]
        if name not in known and name not in PEERS:
            raise InputError(f"{where}.name: unknown model {name!r}. Known: {', '.join(sorted(known))}; peers: "
                             f"{', '.join(PEERS)}.")
        params = entry.get("params") or {}
        if not isinstance(params, dict):
            raise InputError(f"{where}.params must be a mapping. Found {params!r}.")
        if name in PEERS:  # the peer's own constructor arguments: the peer checks them
            if PEERS[name][0] not in peers:
                raise InputError(f"{where}.name: {name} runs in {PEERS[name][0]}'s own interpreter: add "
                                 f"peers: {{{PEERS[name][0]}: /path/to/python}} to the spec.")
            out.append((name, str(entry.get("label") or name), params))
            continue
        names = set(get_model_class(name)._param_names())
        unknown = sorted(set(params) - names)
        if unknown:
            raise InputError(f"{where}.params: {name} has no hyper-parameter {', '.join(unknown)}. "
                             f"Valid: {', '.join(sorted(names))}.")
        label = entry.get("label") or (name if not params else
                                       name + "(" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + ")")
        out.append((name, str(label), params))
    labels = [label for _, label, _ in out]
    if len(set(labels)) < len(labels):
        raise InputError("spec.models: two models have the same label; give one a 'label'.")
    return out


def _datasets(entries: list, base: Path) -> list[tuple[str, str | None, str | None]]:
    from dpsynth.datasets import REGISTRY

    out = []
    for i, entry in enumerate(entries):
        where = f"spec.datasets[{i}]"
        entry = _entry(entry, where, "dataset", ("name", "path", "target"))
        name, path, target = str(entry["name"]), entry.get("path"), entry.get("target")
        if path is None:
            if name not in REGISTRY:
                raise InputError(f"{where}.name: unknown dataset {name!r} (give a 'path' for a file). Known: "
                                 f"{', '.join(sorted(REGISTRY))}.")
            if REGISTRY[name].task == "graph":
                raise InputError(f"{where}.name: {name} is a graph; `dpsynth bench` runs table models.")
        else:
            resolved = (base / path) if not Path(path).is_absolute() else Path(path)
            if not resolved.is_file():
                raise InputError(f"{where}.path: {resolved} does not exist.")
            path = str(resolved.resolve())
        out.append((name, path, None if target is None else str(target)))
    return out


def _risk(value) -> tuple[str, ...]:
    """The attacks of ``risk:`` (none by default; ``default``: dpsynth's default attacks; the shadow attack needs
    a generator to refit and is not run by the bench)."""
    from dpsynth.attacks.risk import DEFAULT_ATTACKS

    if value is False or value is None:
        return ()
    if value is True or value == "default":
        return tuple(DEFAULT_ATTACKS)
    if not isinstance(value, list) or not value or any(a not in DEFAULT_ATTACKS for a in value):
        raise InputError(f"spec.risk must be false, 'default' or a list of {', '.join(DEFAULT_ATTACKS)}. "
                         f"Found {value!r}.")
    return tuple(value)


def parse_spec(data: Any, *, base: str | Path = ".") -> BenchSpec:
    """Validate a spec already read into Python objects (see the module docstring for the fields)."""
    from dpsynth import __version__
    from dpsynth.evaluation.core import GROUPS

    if not isinstance(data, dict):
        raise InputError(f"A benchmark spec must be a mapping of fields. Found {type(data).__name__}.")
    unknown = set(data) - _TOP
    if unknown:
        raise InputError(f"spec has unknown field(s) {', '.join(sorted(unknown))}; allowed: "
                         f"{', '.join(sorted(_TOP))}.")
    peers = _peers(data.get("peers") or {})
    models = _models(_list(data, "models"), peers)
    datasets = _datasets(_list(data, "datasets"), Path(base))
    epsilons = [_number(e, f"spec.epsilons[{i}]", allow_inf=True) for i, e in enumerate(_list(data, "epsilons"))]
    deltas = [_number(d, f"spec.deltas[{i}]") for i, d in enumerate(_list(data, "deltas", [1e-5]))]
    for i, d in enumerate(deltas):
        if d >= 1:
            raise InputError(f"spec.deltas[{i}] must be < 1. Found {d}.")
    seeds = _list(data, "seeds", [0])
    for i, s in enumerate(seeds):
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise InputError(f"spec.seeds[{i}] must be an integer >= 0. Found {s!r}.")
    schema = data.get("schema", "public")
    if schema not in ("public", "none"):
        raise InputError(f"spec.schema must be 'public' or 'none'. Found {schema!r}.")
    dtypes = data.get("dtypes", "public")
    if dtypes not in ("public", "private"):
        raise InputError(f"spec.dtypes must be 'public' or 'private'. Found {dtypes!r}.")
    if dtypes == "private" and schema == "public":
        raise InputError("spec.dtypes: private applies without a schema; set schema: none.")
    declare_target = data.get("declare_target", False)
    if not isinstance(declare_target, bool):
        raise InputError(f"spec.declare_target must be true or false. Found {declare_target!r}.")
    if declare_target and schema == "public":
        raise InputError("spec.declare_target applies without a schema (a public schema declares its target); set "
                         "schema: none.")
    noise = data.get("noise", "numpy")
    if noise not in ("numpy", "secure"):
        raise InputError(f"spec.noise must be 'numpy' or 'secure'. Found {noise!r}.")
    rows = data.get("rows", 0)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
        raise InputError(f"spec.rows must be an integer >= 0 (0: every row). Found {rows!r}.")
    metrics = data.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not all(m in GROUPS for m in metrics):
        raise InputError(f"spec.metrics must be a list of {', '.join(GROUPS)}. Found {metrics!r}.")
    eval_seeds = data.get("eval_seeds", [0])
    if not isinstance(eval_seeds, list) or not eval_seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in eval_seeds):
        raise InputError(f"spec.eval_seeds must be a non-empty list of integers. Found {eval_seeds!r}.")
    risk = _risk(data.get("risk", False))
    ml_models = _ml_models(data.get("ml_models"))
    limits = dict(DEFAULT_LIMITS)
    given = data.get("limits") or {}
    if not isinstance(given, dict) or set(given) - set(DEFAULT_LIMITS):
        raise InputError(f"spec.limits must be a mapping with time_s and/or memory_gb. Found {given!r}.")
    for name, value in given.items():
        limits[name] = _number(value, f"spec.limits.{name}")
    from dpsynth.bench.peers import peer_library

    runs = [Run(model, label, params, dataset, path, target, epsilon, delta, int(seed), schema, dtypes, rows,
                tuple(metrics), tuple(int(s) for s in eval_seeds), risk, __version__, ml_models,
                peers.get(peer_library(model) or ""), declare_target, noise)
            # seeds outermost: a grid stopped part-way has a first seed of every cell rather than all seeds of few
            for seed in seeds for epsilon in epsilons for delta in deltas for (dataset, path, target) in datasets
            for (model, label, params) in models]
    kept = [run for run in runs if math.isinf(run.epsilon) or _is_private(run.model)]
    if noise == "secure":
        from dpsynth.models import secure_noise_models

        covered = secure_noise_models()  # no peer is: their noise is their library's
        for run in kept:
            if not math.isinf(run.epsilon) and run.model not in covered:
                raise InputError(f"spec.noise: secure covers dpsynth's DP models; {run.model} draws its noise in "
                                 "its own library. Found noise: secure.")
    if not kept:
        raise InputError("spec.epsilons: every model of the spec is non-private and every epsilon finite; add inf.")
    return BenchSpec(str(data.get("name", "benchmark")), kept, limits, non_private_left_out=len(runs) - len(kept))


def _is_private(model: str) -> bool:
    """Whether ``model`` (a dpsynth model or a peer) can fit at a finite epsilon."""
    from dpsynth.bench.peers import PEERS
    from dpsynth.models import get_model_class

    return PEERS[model][2] if model in PEERS else bool(get_model_class(model).supports_dp)


def _ml_models(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    from dpsynth.evaluation.ml_efficacy import MODELS

    if not isinstance(value, list) or not value or not all(m in MODELS for m in value):
        raise InputError(f"spec.ml_models must be a non-empty list drawn from {', '.join(MODELS)}. Found {value!r}.")
    return tuple(dict.fromkeys(value))


def _peers(value: Any) -> dict[str, str]:
    """``peers:``: library key -> an interpreter that has it (dpsynth.bench.peers)."""
    import os

    from dpsynth.bench.peers import PEERS

    libraries = sorted({library for library, _, _ in PEERS.values()})
    if not isinstance(value, dict) or set(value) - set(libraries):
        raise InputError(f"spec.peers must map {' / '.join(libraries)} to a Python interpreter. Found {value!r}.")
    for library, python in value.items():
        if not isinstance(python, str) or not (Path(python).is_file() and os.access(python, os.X_OK)):
            raise InputError(f"spec.peers.{library}: {python!r} is not an executable Python interpreter.")
    return dict(value)
