"""Weight files for CLIP and SAM: hashing them, and saying in one line why one does not fit.

PyTorch reports a state dict that does not fit its model over many lines (the first
is only "Error(s) in loading state_dict for CLIP:"), and a file that is not a
checkpoint with a paragraph of advice. A user needs one line: which tensors differ
and, where the shapes tell, which model the file is for.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "file_tag",
    "guess_sam_model",
    "mismatch",
    "one_line",
    "path_problem",
    "quiet_open_clip",
    "shapes",
    "tensor_tag",
    "unreadable",
]

Shapes = Mapping[str, tuple[int, ...]]


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut at a word boundary (with "…") when longer than ``limit``."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def _first_sentence(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat.split(". ", 1)[0].rstrip(".")


def path_problem(path: Path, what: str) -> str | None:
    """Why ``path`` cannot be a weights file (missing, a directory, unreadable), or None."""
    if path.is_dir():
        return f"{what} {path} is a directory, not a file"
    if not path.exists():
        return f"{what} {path} not found"
    if not path.is_file():
        return f"{what} {path} is not a regular file"
    return None


def unreadable(e: BaseException) -> str:
    """Why a file did not read as a checkpoint, in a few words (torch's paragraph, its point)."""
    text = str(e)
    marker = "WeightsUnpickler error:"
    if marker in text:  # torch.load(weights_only=True) met something other than tensors
        text = text.split(marker, 1)[1].split("Check the documentation")[0]
    return f"truncated or not a checkpoint ({one_line(_first_sentence(text), 160)})"


def shapes(state: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor of a state dict (other values: an empty shape)."""
    return {k: tuple(getattr(v, "shape", ())) for k, v in state.items()}


def _shape(s: tuple[int, ...]) -> str:
    return "[" + ",".join(str(int(d)) for d in s) + "]"


def mismatch(expected: Shapes, found: Shapes, model: str) -> str | None:
    """What differs between a model's state dict (``expected``) and a file's (``found``), or None.

    One clause each for tensors of another shape, keys the file lacks and keys the
    model does not have, each with its count and a first example.
    """
    differ = [k for k, s in expected.items() if k in found and tuple(found[k]) != tuple(s)]
    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    parts = []
    if differ:
        k = differ[0]
        n = len(differ)
        parts.append(
            f"size mismatch: {n} tensor{'s differ' if n > 1 else ' differs'} in shape, e.g. "
            f"{k} {_shape(found[k])} in the file vs {_shape(expected[k])} for {model}"
        )
    if missing:
        parts.append(
            f"missing {len(missing)} key{'s' if len(missing) > 1 else ''}, e.g. {missing[0]}"
        )
    if unexpected:
        parts.append(f"unexpected {len(unexpected)}, e.g. {unexpected[0]}")
    return "; ".join(parts) or None


# SAM's image encoder: (width, depth) of each model (segment_anything/build_sam.py).
_SAM_ENCODERS = {(768, 12): "vit_b", (1024, 24): "vit_l", (1280, 32): "vit_h"}
_SAM_BLOCK = re.compile(r"^image_encoder\.blocks\.(\d+)\.")


def guess_sam_model(found: Shapes) -> str | None:
    """Which SAM a checkpoint is for, from its image encoder's width and depth; None if unclear."""
    patch = found.get("image_encoder.patch_embed.proj.weight")
    if patch:
        blocks = {int(m.group(1)) for k in found if (m := _SAM_BLOCK.match(k))}
        return _SAM_ENCODERS.get((int(patch[0]), len(blocks)))
    if any(k.startswith("image_encoder.patch_embed.seq.") for k in found):
        return "vit_t"  # MobileSAM's TinyViT
    return None


def file_tag(path: Path) -> str:
    """Short content hash of a weights file, so identities change when weights do."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256-" + h.hexdigest()[:12]


def tensor_tag(module: Any) -> str:
    """Short hash of a module's tensors (names, dtypes, shapes, values), not of a file's bytes.

    The same weights saved as ``.pt`` or ``.safetensors``, whole or as the image tower
    alone, hash alike: what the features depend on is what is hashed.
    """
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(_torch().uint8).numpy())
    return "sha256-" + h.hexdigest()[:12]


def _torch() -> Any:
    import torch

    return torch


class _DropOpenClip(logging.Filter):
    """Drops records open_clip logs to the root logger while we load (we report ourselves)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "open_clip" not in Path(record.pathname).parts


@contextmanager
def quiet_open_clip() -> Iterator[None]:
    """Silence open_clip's root-logger lines and huggingface_hub's retry warnings for a load.

    open_clip says "Model initialized randomly" before our weights go in, and the hub
    prints each retry twice; the outcome is reported in one line by the caller instead.
    """
    root, hub = logging.getLogger(), logging.getLogger("huggingface_hub")
    drop, level = _DropOpenClip(), hub.level
    root.addFilter(drop)
    hub.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.removeFilter(drop)
        hub.setLevel(level)
