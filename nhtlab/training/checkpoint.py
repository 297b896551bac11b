"""Atomic checkpoints, so that a long run survives a lost Colab session or a killed job.

``<run_dir>/checkpoint.pt`` holds everything the loop needs to continue exactly where it stopped (model,
optimiser, scheduler, sampler and global RNG states, the history, the step); on the CPU the resumed run is
bit-for-bit the uninterrupted one. Files are written atomically (temporary file, fsync, :func:`os.replace`),
so a process killed at any instant leaves the previous checkpoint or the new one, never half of one.

A checkpoint carries its run's key and a SHA-256 of its content (:func:`checksum`); one whose checksum or key
does not match is moved aside with a :class:`RuntimeWarning` and the run starts again from step 0.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..validation import require_type

__all__ = ["atomic_write_bytes", "capture_rng_state", "restore_rng_state", "save_checkpoint", "load_checkpoint",
           "claim_run_dir", "checkpoint_path", "checksum", "set_aside"]

CHECKPOINT_NAME = "checkpoint.pt"


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: readers see the old content or the new one, never a part."""
    require_type(data, "data", (bytes, bytearray), owner="atomic_write_bytes")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def capture_rng_state() -> dict[str, Any]:
    """The global random states of Python, NumPy and PyTorch (CPU and CUDA).

    Plain types and tensors only, so :func:`torch.load` reads them back with ``weights_only=True``.
    """
    np_kind, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (np_kind, torch.from_numpy(np_keys.astype(np.int64)), int(np_pos), int(np_has_gauss), float(np_gauss)),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng_state(state: dict[str, Any]) -> None:
    """Restore the states captured by :func:`capture_rng_state`."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, gauss_value = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss_value))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


def checkpoint_path(run_dir: str | os.PathLike) -> Path:
    """Where the checkpoint of ``run_dir`` lives."""
    return Path(run_dir) / CHECKPOINT_NAME


def checksum(payload: Mapping[str, Any]) -> str:
    """SHA-256 of a checkpoint's content but its ``checksum``: tensors by dtype, shape and bytes, the rest by repr."""
    digest = hashlib.sha256()

    def walk(x: Any) -> None:
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous().reshape(-1)
            digest.update(f"T{t.dtype}{tuple(x.shape)}".encode() + t.view(torch.uint8).numpy().tobytes())
        elif isinstance(x, Mapping):
            for k in sorted(x, key=repr):
                if k != "checksum":
                    digest.update(repr(k).encode())
                    walk(x[k])
        elif isinstance(x, (list, tuple)):
            digest.update(b"[")
            for v in x:
                walk(v)
            digest.update(b"]")
        else:
            digest.update(repr(x).encode())

    walk(payload)
    return digest.hexdigest()


def save_checkpoint(run_dir: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """Write ``payload`` with its :func:`checksum` atomically to ``run_dir``'s checkpoint; returns the file."""
    require_type(payload, "payload", dict, owner="save_checkpoint")
    buffer = io.BytesIO()
    torch.save({**payload, "checksum": checksum(payload)}, buffer)
    return atomic_write_bytes(checkpoint_path(run_dir), buffer.getvalue())


def set_aside(path: Path, why: str) -> None:
    """Move a checkpoint that cannot be trusted to ``<name>.corrupt`` and warn that the run starts again."""
    os.replace(path, path.with_name(path.name + ".corrupt"))
    warnings.warn(f"The checkpoint {path} {why}; it was moved to {path.name}.corrupt and the run starts again "
                  f"from step 0.", RuntimeWarning, stacklevel=3)


def load_checkpoint(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    """Read the checkpoint of ``run_dir``; None when there is none.

    An unreadable file or a wrong :func:`checksum` is set aside (:func:`set_aside`) and gives None, so the run
    starts again from step 0 rather than from wrong state.
    """
    require_type(run_dir, "run_dir", (str, os.PathLike), owner="load_checkpoint")
    if Path(run_dir).is_file():
        raise ValueError(f"The 'run_dir' parameter of load_checkpoint must be the run's folder (the one that holds "
                         f"{CHECKPOINT_NAME}), not a file. Got {os.fspath(run_dir)!r}; pass its parent folder.")
    path = checkpoint_path(run_dir)
    if not path.exists():
        return None
    try:
        payload = torch.load(path, weights_only=True)
        if not isinstance(payload, dict) or "step" not in payload or "checksum" not in payload:
            raise ValueError("not an nhtlab checkpoint with a checksum")
        if checksum(payload) != payload["checksum"]:
            raise ValueError("its content does not match its checksum")
        return payload
    except Exception as error:  # noqa: BLE001 — any unreadable file is treated the same way
        set_aside(path, f"could not be read ({type(error).__name__}: {error})")
        return None


def claim_run_dir(run_dir: str | os.PathLike, run: Any, owner: str) -> None:
    """Write ``run.json`` into a new run directory, or check that an existing one belongs to ``run``."""
    require_type(run_dir, "run_dir", (str, os.PathLike), owner=owner)
    run_dir = Path(run_dir)
    config_file = run_dir / "run.json"
    if config_file.exists():
        try:
            theirs = json.loads(config_file.read_text())
            if not isinstance(theirs, dict):
                raise ValueError(f"it holds a {type(theirs).__name__}, not a run's fields")
        except (ValueError, UnicodeDecodeError) as error:
            raise ValueError(
                f"The 'run_dir' parameter of {owner} ({run_dir}) holds a damaged run.json ({error}); it cannot "
                f"say which run the directory belongs to. Delete {config_file} (and the checkpoint beside it) "
                f"to start the run afresh, or use another directory."
            ) from error
        if theirs != run.to_dict():
            changed = sorted(k for k in set(theirs) | set(run.to_dict()) if theirs.get(k) != run.to_dict().get(k))
            raise ValueError(
                f"The 'run_dir' parameter of {owner} ({run_dir}) belongs to a different run "
                f"(fields that differ: {', '.join(changed)}). Use one directory per run."
            )
        return
    atomic_write_bytes(config_file, json.dumps(run.to_dict(), sort_keys=True, indent=1).encode())
