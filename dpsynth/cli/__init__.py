"""The ``dpsynth`` command line: one module per group of subcommands, none of them imported by the library.

:mod:`.main` parses arguments and runs fit / sample / info / schema / datasets / demo; :mod:`.evaluate` adds
``evaluate`` and ``report``; :mod:`.attack` adds ``attack`` and ``audit``. Each calls the public API
(``dpsynth.models``, ``dpsynth.evaluation``, ``dpsynth.attacks``) and prints results; the library packages never
import this one, so the layers are data / privacy / models -> evaluation / attacks -> cli.
"""

from dpsynth.cli.main import build_parser, main

__all__ = ["main", "build_parser"]
