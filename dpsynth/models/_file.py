"""Model files trust nothing they read: header structure, a content digest, and a ledger recomputed from its events.

A model file is one safetensors file whose metadata entry ``"dpsynth"`` holds the JSON header (schema, DP
metadata, hyper-parameters, ledger, model state). Loading never unpickles. This module

- checks the header's structure (a mapping with the required fields of the right JSON types) and turns anything
  malformed into one :class:`~dpsynth.errors.ModelFileError` line;
- computes a **content digest** (SHA-256 over the header without its digest and over every tensor's name, dtype,
  shape and bytes), written by ``save`` and verified by every read: accidental corruption or an edit is detected.
  A digest is not a signature: whoever edits a file can recompute it;
- recomputes the privacy ledger from its events (:func:`ledger_check`): what ``info`` and reports show, with flags
  when the recomputed epsilon exceeds the target, disagrees with the stored summary, or the events name phases the
  model does not have.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from dpsynth.errors import ModelFileError

__all__ = ["FORMAT_VERSION", "META_KEY", "check_header", "content_digest", "ledger_check", "read_model_file",
           "read_model_header"]

FORMAT_VERSION = 1
META_KEY = "dpsynth"
#: header field -> JSON type(s) it must have (None allowed where listed)
_FIELDS = {
    "format_version": (int,),
    "model": (str,),
    "params": (dict,),
    "schema": (dict,),
    "ledger": (dict,),
    "metadata": (dict,),
    "state": (dict,),
    "marginal_map": (dict, type(None)),
    "fit": (dict, type(None)),
}


#: safetensors dtype code -> the torch dtype name the digest hashes (so the digest is computed without torch)
_DTYPES = {"F64": "torch.float64", "F32": "torch.float32", "F16": "torch.float16", "BF16": "torch.bfloat16",
           "I64": "torch.int64", "I32": "torch.int32", "I16": "torch.int16", "I8": "torch.int8",
           "U8": "torch.uint8", "BOOL": "torch.bool"}
_MAX_HEADER = 100 * 2**20  # safetensors' own limit on the JSON header


def _digest(header: dict[str, Any], tensors: list[tuple[str, str, tuple, bytes]]) -> str:
    h = hashlib.sha256()
    body = {k: v for k, v in header.items() if k != "digest"}
    h.update(json.dumps(body, sort_keys=True, allow_nan=False, separators=(",", ":")).encode("utf-8"))
    for name, dtype, shape, data in sorted(tensors):
        h.update(f"\0{name}\0{dtype}\0{shape}\0".encode())
        h.update(data)
    return "sha256:" + h.hexdigest()


def content_digest(header: dict[str, Any], tensors: dict[str, Any]) -> str:
    """``"sha256:<hex>"`` over the canonical JSON of ``header`` (its ``digest`` field left out) and the tensors
    (name, dtype, shape and little-endian bytes, in name order)."""
    import torch

    raw = []
    for name, tensor in tensors.items():
        t = tensor.detach().contiguous().cpu()
        raw.append((name, str(t.dtype), tuple(t.shape), t.reshape(-1).view(torch.uint8).numpy().tobytes()))
    return _digest(header, raw)


def _read_raw(path: Path) -> tuple[dict[str, str], list[tuple[str, str, tuple, bytes]]]:
    """(metadata, [(name, torch dtype name, shape, bytes)]) of a safetensors file, parsed without torch.

    The format: 8 bytes little-endian header length N, N bytes of JSON ({tensor name: {dtype, shape,
    data_offsets}, "__metadata__": {str: str}}), then the tensor data. Every offset is checked against the file."""
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"{path} cannot be read ({exc.strerror or exc}).") from exc
    if len(blob) < 8:
        raise ModelFileError(f"{path} is not a dpsynth model file (too short).")
    n = int.from_bytes(blob[:8], "little")
    if not (2 <= n <= min(_MAX_HEADER, len(blob) - 8)):
        raise ModelFileError(f"{path} is not a dpsynth model file (no safetensors header).")
    try:
        table = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path} is not a dpsynth model file (unreadable safetensors header).") from exc
    if not isinstance(table, dict):
        raise ModelFileError(f"{path} is not a dpsynth model file (malformed safetensors header).")
    data = memoryview(blob)[8 + n:]
    meta = table.pop("__metadata__", None) or {}
    tensors = []
    for name, info in table.items():
        try:
            dtype, shape = _DTYPES[info["dtype"]], tuple(int(d) for d in info["shape"])
            start, end = info["data_offsets"]
            ok = isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFileError(f"{path}: tensor {name!r} has a malformed entry in the safetensors header.") from exc
        if not ok or any(d < 0 for d in shape):
            raise ModelFileError(f"{path}: tensor {name!r} points outside the file.")
        tensors.append((name, dtype, shape, bytes(data[start:end])))
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ModelFileError(f"{path} is not a dpsynth model file (malformed safetensors metadata).")
    return meta, tensors


def read_model_header(path: str | os.PathLike) -> dict[str, Any]:
    """The header of a model file whose structure and digest check out (ModelFileError otherwise), read without
    torch: what ``dpsynth info`` and reports need, in a fraction of a second."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"No model file at {path}.")
    meta, tensors = _read_raw(path)
    if META_KEY not in meta:
        raise ModelFileError(f"{path} is a safetensors file but not a dpsynth model (no '{META_KEY}' header).")
    try:
        header = json.loads(meta[META_KEY])
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path}: the model header is not valid JSON ({exc}).") from exc
    check_header(header, path)
    if "digest" in header:  # files written before digests were added have none: nothing to verify
        try:
            digest = _digest(header, tensors)
        except (TypeError, ValueError) as exc:  # e.g. a NaN smuggled into the JSON
            raise ModelFileError(f"{path}: the model header cannot be hashed ({exc}).") from exc
        if header["digest"] != digest:
            raise ModelFileError(f"{path}: content digest mismatch: the file was corrupted or edited after it was "
                                 "written (a digest detects accidents; it is not a signature).")
    return header


def read_model_file(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, header) of a model file whose structure and digest check out; ModelFileError otherwise."""
    from safetensors import safe_open

    header = read_model_header(path)
    try:
        with safe_open(str(path), framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not iterable)
    except Exception as exc:
        raise ModelFileError(f"{path} is not a dpsynth model file ({type(exc).__name__}: {exc}).") from exc
    return tensors, header


def check_header(header: Any, path: str | os.PathLike) -> None:
    """The header is a mapping with every required field of the right JSON type (one ModelFileError line)."""
    if not isinstance(header, dict):
        raise ModelFileError(f"{path}: the model header must be a JSON object. Found {type(header).__name__}.")
    if header.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(
            f"{path} has model format {header.get('format_version')!r}; this dpsynth reads format {FORMAT_VERSION}.")
    for name, types in _FIELDS.items():
        if name not in header and type(None) not in types:
            raise ModelFileError(f"{path}: the model header lacks '{name}'.")
        if not isinstance(header.get(name), types):
            expected = " or ".join("null" if t is type(None) else {dict: "an object"}.get(t, t.__name__) for t in types)
            raise ModelFileError(f"{path}: the model header's '{name}' must be {expected}. "
                                 f"Found {type(header.get(name)).__name__}.")
    if "digest" in header and not isinstance(header["digest"], str):
        raise ModelFileError(f"{path}: the model header's 'digest' must be text.")


def ledger_check(header: dict[str, Any], phases: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[str]]:
    """(ledger recomputed from its events as a dict, flags). Flags: the recomputed epsilon exceeds the target;
    it disagrees with the summary stored in the file; an event's phase is not one of the model's ``phases``."""
    from dpsynth.privacy.ledger import PrivacyLedger

    stored = header["ledger"]
    try:
        ledger = PrivacyLedger.from_dict(stored)
    except Exception as exc:
        raise ModelFileError(f"the model's ledger cannot be read ({type(exc).__name__}: {exc}).") from exc
    recomputed = ledger.to_dict()
    flags = []
    eps, target = ledger.epsilon(), ledger.target_epsilon
    if eps > target * (1 + 1e-9):
        flags.append(f"the recomputed epsilon {eps:.4g} exceeds the ledger's target {target:.4g}")
    claimed = stored.get("epsilon")
    claimed = math.inf if claimed == "inf" else claimed
    if not isinstance(claimed, (int, float)) or not math.isclose(float(claimed), eps, rel_tol=1e-6, abs_tol=1e-9):
        flags.append(f"the stored summary says epsilon {claimed!r}, the events give {eps:.6g}")
    unknown = sorted({e.phase for e in ledger.entries} - set(phases)) if phases else []
    if unknown:
        flags.append(f"events in phases {unknown} that a '{header['model']}' model does not have "
                     f"(its phases: {list(phases)})")
    return recomputed, flags
