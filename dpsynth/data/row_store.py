"""Encoded private rows on disk, read by position: how a DP-SGD model trains on a table larger than memory.

A fit from a file (``fit(path, backend="duckdb")``) encodes the rows once, chunk by chunk, with the transformer
already fitted on the DP metadata, into a float32 matrix in a private temporary folder (mode 0700, removed by
:meth:`EncodedRows.close` or when the store is collected). Each DP-SGD step then reads only the rows its Poisson
sample drew, by positioned reads (``store[idx]``): the file's pages stay in the operating system's cache, not in the
process. Memory is one chunk while encoding and one batch while training, whatever the number of rows.

The store holds private rows: it is never saved with a model and never leaves the fit. ``len(store)`` is the exact
row count, used as the private ``n_rows`` of the sampler (never recorded; the sampling rate and the ledger use the
DP row count, as for a tensor in memory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable
from contextlib import contextmanager

import numpy as np
import torch

from dpsynth.errors import InputError

__all__ = ["EncodedRows", "encode_table", "rows_on_disk", "check_row_backend", "ENCODE_CHUNK_ROWS", "ROW_BACKENDS"]

#: where a DP-SGD model reads its rows: a pandas frame in memory ("numpy"), or a file / Spark DataFrame held by an
#: engine and encoded onto disk ("duckdb", "spark")
ROW_BACKENDS = ("numpy", "duckdb", "spark")


def check_row_backend(model) -> None:
    """One InputError line when a model's ``backend`` hyper-parameter is not one of :data:`ROW_BACKENDS`
    (a model saved before backends existed has none: it read frames)."""
    backend = getattr(model, "backend", "numpy")
    if backend not in ROW_BACKENDS:
        raise InputError(f"backend must be one of {', '.join(ROW_BACKENDS)}. Found {backend!r}.")


#: rows per chunk when a table is encoded onto disk
ENCODE_CHUNK_ROWS = 65_536

_FILE = "rows.f32"


class EncodedRows:
    """A float32 matrix of ``n_rows`` x ``width`` in a private folder; index it like a tensor of rows."""

    def __init__(self, folder: str, n_rows: int, width: int):
        self.folder, self.n_rows, self.width = folder, int(n_rows), int(width)
        self.path = os.path.join(folder, _FILE)
        self._finalizer = weakref.finalize(self, shutil.rmtree, folder, True)

    @classmethod
    def write(cls, chunks: Iterable[np.ndarray], *, width: int) -> EncodedRows:
        """Write the encoded chunks (each ``rows x width``) in order; nothing is left behind if a chunk fails."""
        folder = tempfile.mkdtemp(prefix="dpsynth-rows-")  # mode 0700
        n_rows = 0
        try:
            with open(os.path.join(folder, _FILE), "wb") as out:
                for chunk in chunks:
                    chunk = np.ascontiguousarray(chunk, dtype=np.float32)
                    if chunk.ndim != 2 or chunk.shape[1] != width:  # the message names no row count (rule 8)
                        raise InputError(f"Internal error: an encoded chunk is not a matrix of {width} columns.")
                    out.write(chunk.tobytes())
                    n_rows += chunk.shape[0]
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(folder, n_rows, width)

    def __len__(self) -> int:
        return self.n_rows

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.width)

    def __getitem__(self, idx) -> torch.Tensor:
        """The rows at positions ``idx`` (a tensor or array of integers of any shape), in that order, as a new
        float32 tensor of shape ``idx.shape + (width,)`` (as indexing a tensor of rows gives); a slice ``x[a:b]``
        is one contiguous read (passes over every row, a chunk at a time)."""
        if isinstance(idx, slice):
            start, stop, step = idx.indices(self.n_rows)
            if step == 1:
                return self._read_range(start, max(start, stop))
            idx = np.arange(start, stop, step)
        positions = idx.numpy() if isinstance(idx, torch.Tensor) else np.asarray(idx)
        shape = (*positions.shape, self.width)
        positions = positions.astype(np.int64, copy=False).reshape(-1)
        if positions.size == 0 or self.n_rows == 0:
            return torch.zeros(shape, dtype=torch.float32)
        if positions.min() < 0 or positions.max() >= self.n_rows:
            raise InputError("Internal error: a row position is outside the encoded rows.")
        # row by row with positioned reads: a memory map of the file let the kernel's read-ahead map hundreds of
        # MB into the process for one batch of sorted positions (measured: 500 rows of a 1.2 GB file, +557 MB of
        # peak memory); reads cost ~2 us a row
        rows = np.empty((positions.size, self.width), dtype=np.float32)
        view, size = memoryview(rows).cast("B"), self.width * 4
        with open(self.path, "rb", buffering=0) as f:
            for k, position in enumerate(positions.tolist()):
                f.seek(position * size)
                if f.readinto(view[k * size:(k + 1) * size]) != size:
                    raise InputError("Internal error: the encoded rows' file is shorter than written.")
        return torch.from_numpy(rows).reshape(shape)

    def _read_range(self, start: int, stop: int) -> torch.Tensor:
        rows = np.empty((stop - start, self.width), dtype=np.float32)
        if rows.size == 0:
            return torch.from_numpy(rows)
        view, done = memoryview(rows).cast("B"), 0
        with open(self.path, "rb", buffering=0) as f:
            f.seek(start * self.width * 4)
            while done < len(view):  # a read may return less than asked (Linux: at most ~2 GB a call)
                got = f.readinto(view[done:])
                if not got:
                    raise InputError("Internal error: the encoded rows' file is shorter than written.")
                done += got
        return torch.from_numpy(rows)

    def close(self) -> None:
        """Remove the folder (also done when the store is collected)."""
        self._finalizer()


def encode_table(table, schema, transformer, *, rng: np.random.Generator, exact: bool,
                 chunk_rows: int = ENCODE_CHUNK_ROWS) -> EncodedRows:
    """The rows of an engine-held table (:mod:`dpsynth.marginals.tables`) encoded onto disk by a fitted
    ``transformer``, chunk by chunk: each chunk conformed to ``schema`` (``exact``: the non-private mode's messages)
    and encoded as the frame path encodes its rows (the same function of each row; random draws of an encoding
    come in another order than from one frame, so a seed gives other draws)."""
    from dpsynth.data.frame import conform

    chunks = (transformer.transform(conform(chunk, schema, exact=exact), rng=rng)
              for chunk in table.row_batches(list(schema.names), chunk_rows))
    return EncodedRows.write(chunks, width=transformer.output_dim)


@contextmanager
def rows_on_disk(table, schema, transformer, *, rng: np.random.Generator, exact: bool):
    """:func:`encode_table` for the length of a ``with`` block: the rows on disk are removed when it ends, whatever
    way it ends (a fit's training runs inside it)."""
    rows = encode_table(table, schema, transformer, rng=rng, exact=exact)
    try:
        yield rows
    finally:
        rows.close()
