"""``dpsynth bench`` (issue 22): grids of models x datasets x epsilons x deltas x seeds from a YAML spec
(:mod:`.spec`), each run in its own limited process on a local or Ray executor (:mod:`.runner`,
:mod:`.worker`), results in one DuckDB file that survives ``kill -9`` and resumes (:mod:`.store`), and tables and
plots from it (:mod:`.report`)."""

from dpsynth.bench.runner import run_bench
from dpsynth.bench.spec import BenchSpec, Run, load_spec, parse_spec
from dpsynth.bench.store import ResultStore

__all__ = ["BenchSpec", "ResultStore", "Run", "load_spec", "parse_spec", "run_bench"]
