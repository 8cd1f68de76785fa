"""File helpers: atomic writes (temp file in the same folder, then rename) and reading / writing tables.

Tables are read from CSV (``.csv``; ``.tsv`` is tab-separated; either optionally compressed) or Parquet
(``.parquet`` / ``.pq``) and written to ``.csv`` or ``.parquet`` only: any other output suffix is refused
before work starts (writing CSV into ``synthetic.xlsx`` would make a file no spreadsheet opens). A CSV whose
rows do not all have as many fields as its header is refused with the first bad line: pandas would otherwise
turn extra leading fields into an index or fill missing ones with NaN, silently moving or dropping values.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dpsynth.errors import InputError

__all__ = [
    "TABLE_OUTPUT_SUFFIXES",
    "check_distinct_paths",
    "atomic_write",
    "atomic_write_text",
    "atomic_write_bytes",
    "check_output_path",
    "check_table_output",
    "read_table",
    "write_table",
    "write_table_chunks",
]

TABLE_OUTPUT_SUFFIXES = (".csv", ".parquet")


def check_output_path(path: str | os.PathLike) -> Path:
    """Refuse an output path whose folder does not exist or cannot be written, or that is a folder or a file we
    may not replace (call before long work, not after it)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.exists():
        raise InputError(f"Output folder {folder} does not exist.")
    if path.is_dir():
        raise InputError(f"Output path {path} is a folder; give a file name.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"Output folder {folder} is not writable.")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"Output file {path} exists and is not writable.")
    return path


def check_distinct_paths(inputs: dict[str, object], outputs: dict[str, object]) -> None:
    """Refuse, before any work, an output that is one of the inputs (or another output) of the same command:
    ``dpsynth fit data.csv --out data.csv`` would replace the private table with a model file. Paths are compared
    after resolving links and ``..``, and by inode when both exist (hard links). Inputs that are not files (a
    bundled dataset name) are skipped; ``None`` values are ignored."""
    def resolved(value):
        return Path(os.fspath(value)).expanduser().resolve()

    seen: list[tuple[str, Path]] = [(k, resolved(v)) for k, v in inputs.items()
                                    if v is not None and Path(os.fspath(v)).expanduser().exists()]
    for name, value in outputs.items():
        if value is None:
            continue
        out = resolved(value)
        for other, path in seen:
            same = out == path or (out.exists() and path.exists() and os.path.samefile(out, path))
            if same:
                raise InputError(f"{name} {value} is the same file as {other}; writing it would destroy that file. "
                                 "Choose another output path.")
        seen.append((name, out))


def check_table_output(path: str | os.PathLike) -> Path:
    """Refuse a table output path that is not ``.csv`` or ``.parquet``, or whose folder does not exist."""
    path = check_output_path(path)
    if path.suffix.lower() not in TABLE_OUTPUT_SUFFIXES:
        raise InputError(f"Output table must end in .csv or .parquet. Found '{path.name}'.")
    return path


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.dpsynth-"


def remove_stale_temps(path: Path) -> list[Path]:
    """Delete the temp files an earlier write to ``path`` left when its process was killed (SIGKILL runs no
    cleanup). A temp file is ``.<name>.dpsynth-<pid>-<random>.tmp`` beside ``path``; it is stale when process
    <pid> no longer exists. Files of a live writer, and every other file, are left alone."""
    removed = []
    prefix = _temp_prefix(path)
    for tmp in path.parent.glob(f"{glob_escape(prefix)}*.tmp"):
        pid = tmp.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:
                pass  # another run removed it, or we may not: never fail a write over a stale file
    return removed


def glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user now has that pid: not our writer
        return False
    return True


def atomic_write(path: str | os.PathLike, writer: Callable[[Path], None]) -> Path:
    """Call ``writer(tmp_path)`` and rename the result onto ``path``; on error, leave nothing behind. The temp file
    sits beside ``path`` (same disk, so the rename is atomic) under a name that carries our pid, so that the next
    write to ``path`` removes it if this process is killed before it could (:func:`remove_stale_temps`)."""
    path = check_output_path(path)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{_temp_prefix(path)}{os.getpid()}-", suffix=".tmp", dir=path.parent or ".")
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


def read_table(path: str | os.PathLike, *, sep: str | None = None, as_text: bool = False) -> pd.DataFrame:
    """Read a CSV / TSV (optionally .gz, .bz2, .xz or .zip compressed) or Parquet file; raise InputError with
    the reason if it cannot.

    ``sep`` overrides the separator (default ``","``, or a tab for ``.tsv``). A ragged CSV is refused.
    ``as_text=True`` reads every cell as text (missing: empty cells and pandas' fixed NA tokens), for a fit whose
    dtypes are private (:mod:`dpsynth.data.text`); otherwise pandas infers dtypes from the values.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"No such file: {path}." if not path.exists() else f"Not a file: {path}.")
    suffixes = [s.lower() for s in path.suffixes]
    _refuse_spreadsheets(path, suffixes)
    compressed = bool(suffixes) and suffixes[-1] in _TEXT_OPENERS
    kind = (suffixes[-2] if compressed and len(suffixes) > 1 else suffixes[-1]) if suffixes else ""
    try:
        if kind in (".parquet", ".pq") and not compressed:
            frame = pd.read_parquet(path)
            if as_text:
                from dpsynth.data.text import as_text as to_text

                frame = to_text(frame)
            return frame
        sep = sep or ("\t" if kind == ".tsv" else ",")
        with _open_text(path, suffixes[-1] if compressed else None) as handle:
            _check_rectangular(handle, path, sep)
        # pandas infers the same compression from the suffix
        # low_memory=False: one type decision per column over the whole file (the chunked default may give a
        # column floats in some chunks and strings in others, which a wide file triggers)
        return pd.read_csv(path, sep=sep, dtype="str" if as_text else None, low_memory=False)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - parsers raise many types; all are a user's bad file
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(f"Cannot read {path} as a table: {type(exc).__name__}: {reason}".rstrip(": ") + ".") from exc


_SPREADSHEETS = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")


def _refuse_spreadsheets(path: Path, suffixes: list[str]) -> None:
    """Excel / ODS files by suffix or by their magic bytes (an OLE2 or a zip container that is not a .zip)."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    ole2 = head.startswith(b"\xd0\xcf\x11\xe0")
    zipped = head.startswith(b"PK\x03\x04") and (not suffixes or suffixes[-1] != ".zip")
    if (suffixes and suffixes[-1] in _SPREADSHEETS) or ole2 or zipped:
        raise InputError(f"{path} is a spreadsheet (Excel/ODS) or another binary file; spreadsheets are not supported: "
                         "save the sheet as CSV (or Parquet) and pass that file.")


def _open_zip_member(path: Path):
    import zipfile

    archive = zipfile.ZipFile(path)
    names = archive.namelist()
    if len(names) != 1:
        raise InputError(f"{path} must hold exactly one file to be read as a table. Found {len(names)}.")
    return io.TextIOWrapper(archive.open(names[0]), encoding="utf-8", newline="")


_TEXT_OPENERS = {
    ".gz": lambda p: gzip.open(p, "rt", encoding="utf-8", newline=""),
    ".bz2": lambda p: bz2.open(p, "rt", encoding="utf-8", newline=""),
    ".xz": lambda p: lzma.open(p, "rt", encoding="utf-8", newline=""),
    ".zip": _open_zip_member,
}


def _open_text(path: Path, compression: str | None):
    if compression is None:
        return open(path, encoding="utf-8", newline="")
    return _TEXT_OPENERS[compression](path)


def _check_rectangular(handle, path: Path, sep: str) -> list[str]:
    """Raise InputError at the first record whose field count differs from the header's (blank lines are
    skipped, as pandas skips them). One streaming pass with the csv module, quotes handled as pandas does."""
    reader = csv.reader(handle, delimiter=sep)
    width, header = None, []
    for row in reader:
        if not row:
            continue
        if width is None:
            width, header = len(row), row
            _check_header(row, path, sep)
        elif len(row) != width:
            raise InputError(f"{path}: line {reader.line_num} has {len(row)} fields but the header has {width}; "
                             "fix the file (a ragged table would lose or shift values).")
    return header


def csv_header(path: str | os.PathLike, sep: str) -> list[str]:
    """The column names of a CSV file (optionally compressed) after checking, in one streaming pass, that every
    record has as many fields as the header (as :func:`read_table` does before pandas reads it)."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    compressed = bool(suffixes) and suffixes[-1] in _TEXT_OPENERS
    with _open_text(path, suffixes[-1] if compressed else None) as handle:
        return _check_rectangular(handle, path, sep)


def _check_header(header: list[str], path: Path, sep: str) -> None:
    """Refuse what pandas would silently repair: duplicate names (renamed a, a.1), a first line of data (a file
    without a header loses that row to the header), a file in another separator (one column whose name holds
    the real separator)."""
    import re

    names = [h.strip() for h in header]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"{path}: the header names columns {dupes} more than once; give every column its own name.")
    number = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    if names and all(number.fullmatch(n) for n in names):
        raise InputError(f"{path}: the first line holds only numbers ({len(names)} fields), so the file seems to have "
                         "no header line; add one naming the columns (its first row would be taken as the header).")
    if len(names) == 1:
        for other in (";", "\t", "|", ","):
            if other != sep and other in header[0]:
                shown = "tab" if other == "\t" else repr(other)
                raise InputError(f"{path}: the header has one column but contains {shown}: the file seems "
                                 f"{shown}-separated, not {'tab' if sep == chr(9) else repr(sep)}-separated; pass the "
                                 f"separator (--sep / read_table(sep=...)) or convert the file.")


def write_table_chunks(chunks, path: str | os.PathLike) -> tuple[Path, int]:
    """Write an iterable of frames (same columns) as one CSV or Parquet file, atomically, holding one chunk in
    memory at a time; returns (path, rows written)."""
    path = check_table_output(path)
    written = 0

    def write_csv(tmp: Path) -> None:
        nonlocal written
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            for i, chunk in enumerate(chunks):
                chunk.to_csv(handle, index=False, header=i == 0)
                written += len(chunk)

    def write_parquet(tmp: Path) -> None:
        nonlocal written
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer = None
        try:
            for chunk in chunks:
                table = pa.Table.from_pandas(chunk, preserve_index=False,
                                             schema=None if writer is None else writer.schema)
                if writer is None:
                    writer = pq.ParquetWriter(str(tmp), table.schema)
                writer.write_table(table)
                written += len(chunk)
        finally:
            if writer is not None:
                writer.close()

    atomic_write(path, write_parquet if path.suffix.lower() == ".parquet" else write_csv)
    return path, written


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write CSV or Parquet (by suffix: ``.csv`` or ``.parquet`` only) atomically."""
    path = check_table_output(path)
    if path.suffix.lower() == ".parquet":
        return atomic_write(path, lambda p: df.to_parquet(p, index=False))
    return atomic_write(path, lambda p: df.to_csv(p, index=False))
