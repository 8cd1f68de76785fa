"""The ``dpsynth`` command: parse arguments, call the public API, print results. No logic of its own.

A user error (any :class:`~dpsynth.errors.DPSynthError`, and any bad argument) prints one line
``dpsynth: error: ...`` on stderr and exits with code 2, no usage block, no traceback. ``--help`` still prints
the full usage. When the reader of stdout goes away (``dpsynth info m | head -1``) the command stops quietly
with code 141 (128 + SIGPIPE, what a shell reports for ``cat`` in the same place).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys
import warnings
from pathlib import Path

from dpsynth.errors import DPSynthError, InputError

__all__ = ["main", "build_parser"]

# Subcommands contributed by other packages: module -> names of its add_parsers / run functions
_PLUGINS = ("dpsynth.cli.evaluate", "dpsynth.cli.attack", "dpsynth.cli.graph", "dpsynth.cli.bench")
DEMO_MODEL = "aim"
_EXIT_USER_ERROR = 2
_EXIT_BROKEN_PIPE = 141


_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class _UsageError(DPSynthError):
    """A bad command line (argparse's complaint), reported like every other user error."""


class _Parser(argparse.ArgumentParser):
    """argparse prints a usage block and exits on a bad argument; raise instead, so that main() reports one
    line and exits 2 (subcommand parsers inherit this class through ``add_subparsers``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse takes "-1e-5" and "-inf" for option names ("expected one argument"); let every negative
        # number reach its type check, which then says what is wrong with the value
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str):
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def _epsilon(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"epsilon must be a number or 'inf'. Found {text!r}.") from None
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpsynth", description="Differentially private synthetic data.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_datasets, _add_schema, _add_fit, _add_sample, _add_info, _add_demo):
        add(sub)
    for module_name in _PLUGINS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        module.add_parsers(sub)
    return parser


def _add_datasets(sub) -> None:
    p = sub.add_parser("datasets", help="list the known datasets, or fetch one that cannot ship (census_kdd)")
    p.add_argument("action", nargs="?", default="list", choices=["list", "fetch"])
    p.add_argument("name", nargs="?", help="with fetch: the dataset (census_kdd)")
    p.set_defaults(func=_cmd_datasets)


def _add_schema(sub) -> None:
    p = sub.add_parser("schema", help="propose a schema for a table (reads the private data: review it!)")
    p.add_argument("action", choices=["infer"])
    p.add_argument("data", help="dataset name (e.g. adult) or CSV/Parquet path")
    p.add_argument("--target", help="target column")
    p.add_argument("--sep", help="CSV field separator (default ',', tab for .tsv)")
    p.add_argument("-o", "--out", help="write here instead of stdout (.json or .yaml)")
    p.set_defaults(func=_cmd_schema)


def _add_fit(sub) -> None:
    p = sub.add_parser("fit", help="fit a model on private data with an (epsilon, delta) budget")
    p.add_argument("data", help="dataset name (e.g. adult) or CSV/Parquet path")
    p.add_argument("--model", default="marginals", help="model name (see `dpsynth info --models`)")
    p.add_argument("--epsilon", type=_epsilon, required=True, help="privacy budget; 'inf' = non-private mode")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--schema", help="public schema file (JSON/YAML); without it, metadata is discovered with DP")
    p.add_argument("--sep", help="CSV field separator (default ',', tab for .tsv)")
    p.add_argument("--metadata-share", type=float, default=None,
                   help="share of epsilon for the metadata phase (default: the model's, 0.1 or 0.3 for dp-tldm and "
                   "dp-auto-gan)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="model hyper-parameter")
    p.add_argument("--target", metavar="COL",
                   help="the column the synthetic data is to predict (public, like a schema's target): without "
                   "--schema, DP discovery releases a text target first and, if a class is missing, again from a "
                   "reserve (as much budget as the other columns' histograms) so its rarer classes are released; "
                   "target-aware models (batch-aim) build their workload around it")
    p.add_argument("--backend", choices=["numpy", "duckdb", "spark"], default=None,
                   help="where a DP model reads the rows: 'numpy' in memory (default), 'duckdb' (SQL, spills to "
                   "disk) or 'spark' (the active or a local Spark session); a Parquet / CSV file is then read by that "
                   "engine, never loaded into memory (deep models encode it onto disk and read each step's sample "
                   "from there)")
    p.add_argument("--seed", type=int, help="reproducible fit; whoever knows the seed can replay the DP noise: "
                   "keep it secret, or leave it out for a release")
    p.add_argument("--dtypes", choices=["public", "private"], default=None,
                   help="without --schema: 'private' reads every value as text and decides column kinds with DP "
                   "(default for CSV/TSV, whose types pandas would infer from the values); 'public' trusts the "
                   "file's column types (default for Parquet and the bundled datasets)")
    p.add_argument("--noise", choices=["numpy", "secure"], default="numpy",
                   help="'secure': discrete Gaussian counts and exact selections drawn by OpenDP, and the training "
                   "models' noise and Poisson batches (DP-SGD, PATE, DP-EM) from the system's cryptographic "
                   "generator (every DP model; pip install 'dpsynth[secure]'); 'numpy' (default): "
                   "NumPy's and torch's seedable float samplers")
    p.add_argument("--out", required=True, help="model file to write")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_fit)


def _add_sample(sub) -> None:
    p = sub.add_parser("sample", help="draw synthetic rows from a model file")
    p.add_argument("model_file")
    p.add_argument("-n", type=int, default=None,
                   help="number of rows (default: the model's DP row count; the exact private count would publish it)")
    p.add_argument("-o", "--out", required=True, help="file to write: .csv or .parquet")
    p.add_argument("--seed", type=int)
    p.set_defaults(func=_cmd_sample)


def _add_info(sub) -> None:
    p = sub.add_parser("info", help="show a model file's ledger, schema and parameters")
    p.add_argument("model_file", nargs="?")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--models", action="store_true", help="list the available models")
    p.add_argument("--model", metavar="NAME",
                   help="show a model's hyper-parameters (for --param KEY=VALUE) with their defaults, its ledger "
                        "phases and its documentation")
    p.set_defaults(func=_cmd_info)


def _add_demo(sub) -> None:
    p = sub.add_parser("demo", help="fit, sample, evaluate and report on the bundled Adult data")
    p.add_argument("--model", default=None, help=f"model name (default {DEMO_MODEL})")
    p.add_argument("--epsilon", type=_epsilon, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--rows", type=int, default=None, help="rows to sample (default: the model's DP row count)")
    p.add_argument("--out", default="dpsynth-demo", help="output folder")
    p.add_argument("--seed", type=int, default=0, help="reproducible demo on public data (default 0)")
    p.add_argument("--no-risk", action="store_true", help="skip the privacy attacks (saves about a minute)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_demo)


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        _silence_stdout()
        return _EXIT_BROKEN_PIPE


# Per command: (input arguments, output arguments). An output that is an input (or another output) of the same
# command is refused before any work; every output's folder must exist and be writable.
_PATHS = {
    "fit": (("data", "schema"), ("out",)),
    "schema": (("data",), ("out",)),
    "sample": (("model_file",), ("out",)),
    "evaluate": (("real", "synthetic", "test", "schema", "model", "risk"), ("json", "report")),
    "report": (("json", "risk", "model"), ("report",)),
    "attack": (("train", "synthetic", "control", "schema"), ("json", "report")),
    "audit": (("data", "schema"), ("json",)),
    "bench": (("target", "results_file", "results"), ("html",)),
}


def _check_paths(args) -> None:
    if args.command not in _PATHS:
        return
    from dpsynth._io import check_distinct_paths, check_output_path  # pandas: only for commands that write files

    inputs, outputs = _PATHS[args.command]
    outs = {f"--{name}": getattr(args, name, None) for name in outputs}
    check_distinct_paths({name: getattr(args, name, None) for name in inputs}, outs)
    for value in outs.values():
        if value is not None:
            check_output_path(value)


def _run(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _check_paths(args)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = _show_warning
            code = int(args.func(args) or 0)
        # flush here, inside the handler, so a closed pipe is seen now and not as an "Exception ignored" at exit
        sys.stdout.flush()
        return code
    except DPSynthError as exc:
        print(f"dpsynth: error: {exc}", file=sys.stderr)
        return _EXIT_USER_ERROR
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk, a file that vanished, permissions: one line, nothing half-written
        where = f": {exc.filename}" if exc.filename else ""
        print(f"dpsynth: error: {exc.strerror or exc}{where}.", file=sys.stderr)
        return _EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("dpsynth: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush of the dead pipe cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a file (tests)
        pass


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"dpsynth: warning: {message}", file=sys.stderr)


def _version() -> str:
    from dpsynth import __version__

    return f"dpsynth {__version__}"


# ------------------------------------------------------------------------------------------------ commands
def _cmd_datasets(args) -> int:
    from dpsynth.datasets import fetch, list_datasets

    if args.action == "fetch":
        if not args.name:
            raise InputError("dpsynth datasets fetch needs a dataset name (census_kdd).")
        for path in fetch(args.name):
            print(f"fetched {path}")
        return 0

    table = list_datasets()[["name", "task", "rows", "target", "source", "description"]]
    print(table.fillna("-").to_string(index=False))  # karate (a graph) has no target: "-", not NaN
    return 0


def _cmd_schema(args) -> int:
    from dpsynth._io import check_output_path
    from dpsynth.data.inference import infer_schema
    from dpsynth.datasets import load_table

    if args.out:
        check_output_path(args.out)
    train, _, _, target = load_table(args.data, sep=args.sep)
    schema = infer_schema(train, target=args.target or target)
    print(
        "dpsynth: note: this schema was inferred by READING THE PRIVATE DATA (bounds, categories, special values).\n"
        "It is not differentially private. Review the file, replace data-derived values by public knowledge, then\n"
        'set "provenance": "public" in it to vouch for it, and pass it to `dpsynth fit --schema`\n'
        "(a DP fit refuses a schema whose provenance is still \"inferred\").",
        file=sys.stderr,
    )
    if args.out:
        schema.save(args.out)
        print(f"dpsynth: wrote {args.out}", file=sys.stderr)
    else:
        print(schema.to_json())
    return 0


def _parse_params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs:
        if "=" not in pair:
            raise InputError(f"--param takes KEY=VALUE. Found {pair!r}.")
        key, value = pair.split("=", 1)
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def _fit_model(name, train, *, epsilon, delta, schema, metadata_share, params, seed, progress, dtypes="public",
               target=None, noise="numpy"):
    from dpsynth.models import get_model_class

    model_cls = get_model_class(name)
    try:
        model = model_cls(**params)
    except TypeError as exc:
        raise InputError(f"Bad hyper-parameter for model '{name}': {exc}.") from exc
    return model.fit(train, epsilon=epsilon, delta=delta, schema=schema, metadata_share=metadata_share, seed=seed,
                     progress=progress, dtypes=dtypes, target=target, noise=noise)


def _cmd_fit(args) -> int:
    from dpsynth._io import check_output_path
    from dpsynth.data.schema import Schema
    from dpsynth.datasets import load_table
    from dpsynth.privacy.ledger import check_privacy_params
    from dpsynth.privacy.secure_noise import use_noise

    # cheap checks first: a typo must not cost a data load (or a fit)
    check_privacy_params(args.epsilon, args.delta)
    check_output_path(args.out)
    from dpsynth.models import get_model_class

    model_cls = get_model_class(args.model)  # an unknown model name is one error line before any data is read
    model_cls.check_noise(args.noise, non_private=math.isinf(args.epsilon))
    if args.backend is not None and "backend" not in model_cls._param_names():
        from dpsynth.errors import InputError
        from dpsynth.models import available_models

        readers = ", ".join(n for n in available_models() if get_model_class(n).reads_tables)
        raise InputError(f"--backend applies to the models that read tables ({readers}). Found --model "
                         f"{args.model}.")
    schema = Schema.load(args.schema) if args.schema else None
    dtypes = args.dtypes or _default_dtypes(args.data)
    if _counted_in_engine(args, model_cls, schema, dtypes):
        # the file goes to DuckDB / Spark as it is: its rows never enter this process (flat memory)
        train, bundled_schema = args.data, None
    else:
        train, _, bundled_schema, _ = load_table(args.data, as_text=schema is None and dtypes == "private",
                                                 sep=args.sep)
    if schema is None and bundled_schema is not None:
        schema = bundled_schema
        print(f"dpsynth: using the public schema shipped for '{args.data}'", file=sys.stderr)
    params = _parse_params(args.param)
    if args.backend is not None:
        params["backend"] = args.backend
    share = args.metadata_share if args.metadata_share is not None else model_cls.default_metadata_share
    if schema is None and not math.isinf(args.epsilon) and not args.quiet and 0 < share < 1:
        # the pre-flight estimate: public facts only (budget, share, number and types of columns), before any query
        with use_noise(args.noise):  # the thresholds it quotes are those of the fit's noise
            plan = _plan_of(train, args.backend, epsilon=args.epsilon, delta=args.delta, share=share, dtypes=dtypes,
                            target=args.target)
        if plan is not None:
            print(f"dpsynth: {plan.describe()}", file=sys.stderr)
    model = _fit_model(args.model, train, epsilon=args.epsilon, delta=args.delta, schema=schema,
                       metadata_share=args.metadata_share, params=params, seed=args.seed,
                       progress=not args.quiet, dtypes=dtypes if schema is None else "public", target=args.target,
                       noise=args.noise)
    model.save(args.out)
    print(model.ledger_)
    print(f"dpsynth: wrote {args.out}", file=sys.stderr)
    return 0


def _counted_in_engine(args, model_cls, schema, dtypes: str) -> bool:
    """``dpsynth fit FILE --backend duckdb|spark``: the model reads the file in the engine (a file, not a bundled
    dataset; Parquet, or CSV with the default separator: without a ``--schema``, the engine runs DP discovery with
    private dtypes on the CSV's text as pandas would). A Parquet file with ``--dtypes private`` is read by pandas,
    as text."""
    from dpsynth.datasets import REGISTRY

    is_csv = any(s.lower() in (".csv", ".tsv") for s in Path(args.data).suffixes)
    return (args.backend in ("duckdb", "spark") and (schema is not None or dtypes == "public" or is_csv)
            and model_cls.reads_tables and args.sep is None and args.data not in REGISTRY
            and Path(args.data).exists())


def _plan_of(train, backend, **budget):
    """The discovery plan of a frame, or of a file counted in DuckDB (its column types, read without a row); None
    for Spark (a session would start just to print the plan)."""
    from dpsynth.data.discovery import plan_discovery

    if not isinstance(train, (str, os.PathLike)):  # a pandas frame
        return plan_discovery(train, **budget)
    if backend == "spark":
        return None
    from dpsynth.marginals.tables import DuckDBTable, discovery_source

    table = DuckDBTable(train)
    try:
        if table.text_csv:
            budget["dtypes"] = "private"  # a CSV has no column types: the engine discovers them as pandas would
        return plan_discovery(discovery_source(table), **budget)
    finally:
        table.close()


def _default_dtypes(spec: str) -> str:
    """A CSV has no column types (pandas would infer them from the private values): 'private'. Parquet carries
    types its writer chose, and a bundled dataset ships public ones: 'public'."""
    from dpsynth.datasets import REGISTRY

    if spec in REGISTRY:
        return "public"
    suffixes = [s.lower() for s in Path(spec).suffixes]
    return "public" if suffixes and suffixes[-1] in (".parquet", ".pq") else "private"


def _cmd_sample(args) -> int:
    from dpsynth._io import check_table_output, write_table_chunks
    from dpsynth.models import load_model

    check_table_output(args.out)
    model = load_model(args.model_file)
    n = model.row_count_ if args.n is None else args.n
    _check_disk_space(model, n, args.out, args.seed)
    _, written = write_table_chunks(model.sample_chunks(n, seed=args.seed), args.out)
    print(f"dpsynth: wrote {written} rows to {args.out}", file=sys.stderr)
    return 0


def _check_disk_space(model, n: int, out: str, seed) -> None:
    """Refuse, before any work, an n whose output cannot fit the free space of the output's disk (estimated
    from 1,000 sampled rows written in the same format, with a 20% margin)."""
    import shutil
    import tempfile

    from dpsynth._io import write_table

    probe_rows = 1_000
    if n <= probe_rows:
        return
    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / f"probe{Path(out).suffix.lower()}"
        write_table(model.sample(probe_rows, seed=seed), probe)
        per_row = probe.stat().st_size / probe_rows
    needed = 1.2 * per_row * n
    free = shutil.disk_usage(Path(out).resolve().parent).free
    if needed > free:
        raise InputError(f"-n {n} needs about {needed / 1e9:.3g} GB for {out} but its disk has {free / 1e9:.3g} GB "
                         "free; sample fewer rows or write elsewhere.")


def _cmd_info(args) -> int:
    from dpsynth.models import available_models

    if args.model is not None:
        if args.models or args.model_file:
            raise InputError("info takes a model file, --models or --model NAME: one of them.")
        return _model_info(args.model, as_json=args.json)
    if args.models or not args.model_file:
        names = available_models()
        print(json.dumps(names) if args.json else "\n".join(names))
        return 0
    from dpsynth.models._file import read_model_header  # no torch or pandas: info starts in a fraction of a second
    from dpsynth.privacy.ledger import PrivacyLedger

    header = read_model_header(args.model_file)
    ledger_dict, flags = _checked_ledger(header)
    n_rows = _dp_row_count(header)
    if args.json:
        keys = ("model", "dpsynth_version", "params", "schema", "fit")
        out = {k: header.get(k) for k in keys}
        out["n_rows_dp"] = n_rows
        out["ledger"] = ledger_dict  # recomputed from the events, never the stored summary
        out["ledger_flags"] = flags
        print(json.dumps(out, indent=2))
        return 0
    ledger = PrivacyLedger.from_dict(header["ledger"])
    print(f"model: {header['model']} (dpsynth {header['dpsynth_version']})")
    print(f"parameters: {json.dumps(header['params'])}")
    schema = header["schema"]
    print(f"schema ({schema.get('provenance')}): {len(schema.get('columns', []))} columns, "
          f"target {schema.get('target')}")
    fit = header.get("fit") or {}
    if fit:
        secure = fit.get("noise") == "secure"
        seeded = ("yes (not the noise, which takes no seed; the rest of training's randomness: keep it secret)"
                  if secure else "yes: the noise is reproducible from that seed, keep it secret"
                  ) if fit.get("seeded") else "no"
        noise = ("secure (OpenDP: discrete Gaussian counts, exact selections; training noise and batches from the "
                 "system's cryptographic generator)" if secure else "numpy")
        print(f"fit: metadata share {fit.get('metadata_share')}, public schema {fit.get('public_schema')}, "
              f"seeded {seeded}, noise {noise}")
    if n_rows is not None:
        print(f"DP row count: {n_rows:,} (a DP estimate; what `dpsynth sample` draws without -n)")
    print(ledger)  # recomputed from the events; includes the Gaussian-DP view (mu, separation)
    for flag in flags:
        print(f"WARNING: {flag}")
    return 0


def _dp_row_count(header: dict) -> int | None:
    """The row count a model file publishes (its ``row_count_``), read off the header: the budget's ``n_rows_dp``
    (every model records the count it samples by default there), else the metadata's DP row count (older files);
    None when neither is there."""
    budget = (header.get("state") or {}).get("budget") or {}
    n = budget.get("n_rows_dp", (header.get("metadata") or {}).get("n_rows"))
    return None if n is None else max(1, int(round(float(n))))


def _model_info(name: str, *, as_json: bool) -> int:
    """A model class's public description: what ``--param`` accepts (each hyper-parameter with its default), its
    ledger phases, its default metadata share and its documentation (the class's and its module's docstrings, which
    the README points to). Reads the class only: no data, no budget."""
    import inspect

    from dpsynth.models import get_model_class

    cls = get_model_class(name)  # an unknown name: one InputError line listing the models
    params = cls.default_params()
    module_doc = inspect.cleandoc(sys.modules[cls.__module__].__doc__ or "")
    class_doc = inspect.cleandoc(cls.__doc__ or "")
    if as_json:
        print(json.dumps({"model": cls.name, "class": f"{cls.__module__}.{cls.__qualname__}",
                          "phases": list(cls.phases), "default_metadata_share": cls.default_metadata_share,
                          "secure_noise": cls.secure_noise, "params": params, "doc": class_doc,
                          "module_doc": module_doc}, indent=2, default=repr))
        return 0
    print(f"model: {cls.name} ({cls.__module__}.{cls.__qualname__})")
    print(f"ledger phases: {', '.join(cls.phases)}; default metadata share {cls.default_metadata_share}; "
          f"--noise secure {'supported' if cls.secure_noise else 'not supported (noise of its own)'}")
    print("hyper-parameters (--param KEY=VALUE, the value read as JSON), with their defaults:")
    width = max((len(key) for key in params), default=0)
    for key, default in params.items():
        print(f"  {key:<{width}}  {json.dumps(default, default=repr)}")
    for title, doc in (("about the class", class_doc), (f"about {cls.__module__}", module_doc)):
        if doc:
            print(f"\n{title}:\n{doc}")
    return 0


def _checked_ledger(header: dict) -> tuple[dict, list[str]]:
    from dpsynth.models import model_phases
    from dpsynth.models._file import ledger_check

    return ledger_check(header, model_phases(header["model"]))


def _cmd_demo(args) -> int:
    from dpsynth import datasets
    from dpsynth._io import atomic_write_text, write_table
    from dpsynth.models import available_models
    from dpsynth.privacy.ledger import check_privacy_params

    check_privacy_params(args.epsilon, args.delta)
    name = args.model or (DEMO_MODEL if DEMO_MODEL in available_models() else "marginals")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    adult = datasets.load("adult")
    train, test, schema = adult.train, adult.test, adult.schema
    eps_text = "inf (non-private)" if math.isinf(args.epsilon) else f"{args.epsilon:g}"
    print(f"dpsynth demo: fitting '{name}' on Adult ({len(train):,} rows) at epsilon={eps_text}, delta={args.delta:g}",
          file=sys.stderr)
    model = _fit_model(name, train, epsilon=args.epsilon, delta=args.delta, schema=schema, metadata_share=None,
                       params={}, seed=args.seed, progress=not args.quiet)
    model.save(out / "model.dpsynth")
    synth = model.sample(args.rows, seed=args.seed)  # default: the DP row count, never len(train)
    write_table(synth, out / "synthetic.csv")
    atomic_write_text(out / "ledger.json", json.dumps(model.ledger_.to_dict(), indent=2) + "\n")
    print(model.ledger_)
    try:
        from dpsynth.cli.evaluate import demo_report
    except ImportError:
        print("dpsynth demo: evaluation is not installed (pip install 'dpsynth[eval]'); skipping the report",
              file=sys.stderr)
    else:
        _, lines = demo_report(train, synth, test=test, schema=schema, model_path=out / "model.dpsynth", out=out,
                               risk=not args.no_risk, progress=not args.quiet)
        for line in lines:
            print(line)
    written = [f for f in ("model.dpsynth", "synthetic.csv", "ledger.json", "evaluation.json", "risk.json",
                           "report.html") if (out / f).exists()]
    print(f"dpsynth demo: wrote {', '.join(str(out / f) for f in written)}", file=sys.stderr)
    if "report.html" in written:
        print(f"dpsynth demo: open {out / 'report.html'} in a browser to see the ledger, utility and risk on one page",
              file=sys.stderr)
    return 0

