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

__all__ = ["FORMAT_VERSION", "META_KEY", "check_header", "content_digest", "ledger_check", "read_model_file"]

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


def content_digest(header: dict[str, Any], tensors: dict[str, Any]) -> str:
    """``"sha256:<hex>"`` over the canonical JSON of ``header`` (its ``digest`` field left out) and the tensors."""
    import torch

    h = hashlib.sha256()
    body = {k: v for k, v in header.items() if k != "digest"}
    h.update(json.dumps(body, sort_keys=True, allow_nan=False, separators=(",", ":")).encode("utf-8"))
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        h.update(f"\0{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return "sha256:" + h.hexdigest()


def read_model_file(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors, header) of a model file whose structure and digest check out; ModelFileError otherwise."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"No model file at {path}.")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as exc:
        raise ModelFileError(f"{path} is not a dpsynth model file ({type(exc).__name__}: {exc}).") from exc
    if META_KEY not in meta:
        raise ModelFileError(f"{path} is a safetensors file but not a dpsynth model (no '{META_KEY}' header).")
    try:
        header = json.loads(meta[META_KEY])
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path}: the model header is not valid JSON ({exc}).") from exc
    check_header(header, path)
    if "digest" in header:  # files written before digests were added have none: nothing to verify
        try:
            digest = content_digest(header, tensors)
        except (TypeError, ValueError) as exc:  # e.g. a NaN smuggled into the JSON
            raise ModelFileError(f"{path}: the model header cannot be hashed ({exc}).") from exc
        if header["digest"] != digest:
            raise ModelFileError(f"{path}: content digest mismatch: the file was corrupted or edited after it was "
                                 "written (a digest detects accidents; it is not a signature).")
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
