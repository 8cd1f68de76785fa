"""File helpers: atomic writes (temp file in the same folder, then rename) and reading tables."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dpsynth.errors import InputError

__all__ = ["atomic_write", "atomic_write_text", "atomic_write_bytes", "read_table", "write_table"]


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp_path)`` and rename the result onto ``path``; on error, leave nothing behind."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise InputError(f"Output folder {path.parent} does not exist.")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        writer(tmp_path)
        # mkstemp (and some writers, e.g. safetensors) create files with mode 0600; give the result the mode a
        # plain open() would (0666 & ~umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a CSV (optionally gzipped) or Parquet file; raise InputError with the reason if it cannot."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"No such file: {path}.")
    suffixes = "".join(path.suffixes).lower()
    try:
        if suffixes.endswith(".parquet") or suffixes.endswith(".pq"):
            return pd.read_parquet(path)
        return pd.read_csv(path, sep=None if suffixes.endswith(".tsv") else ",", engine="python" if suffixes.endswith(".tsv") else "c")
    except Exception as exc:  # noqa: BLE001 - parsers raise many types; all are a user's bad file
        raise InputError(f"Cannot read {path} as a table: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ") + ".") from exc


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write CSV or Parquet (by suffix) atomically."""
    path = Path(path)
    if "".join(path.suffixes).lower().endswith((".parquet", ".pq")):
        return atomic_write(path, lambda p: df.to_parquet(p, index=False))
    return atomic_write(path, lambda p: df.to_csv(p, index=False))
