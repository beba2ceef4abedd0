"""What a grid ran on: package versions and the machine, for the report's header.

Runs of one seed are reproducible on one machine with one set of package versions
(docs/benchmarks.md, "Reproducibility"); a figure is comparable only with figures
from the same of both, so every report names them.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

#: Packages whose version can change a run's numbers (segmentation, arithmetic, storage order).
VERSIONED = ("numpy", "opencv-python", "pillow", "ladybug", "kuzu", "lancedb", "torch")
#: Packages that can decide a run's figures too, named only when installed: kgagent itself,
#: the perception models (encoders, segmenter, OCR), the brain's SDK, the third-party games
#: (gym:ID, Crafter, Atari) and Ray. One that is not installed ran no cell.
WHEN_INSTALLED = (
    "kgagent",
    "torchvision",
    "open_clip_torch",
    "segment-anything",
    "rapidocr-onnxruntime",
    "onnxruntime",
    "openai",
    "gymnasium",
    "crafter",
    "ale-py",
    "ray",
)


def versions(extra: tuple[str, ...] = ()) -> str:
    """``python 3.11.7, numpy 2.4.6, …``: :data:`VERSIONED` and ``extra`` (a package that
    is missing says so), then those of :data:`WHEN_INSTALLED` that are installed."""
    parts = [f"python {platform.python_version()}"]
    parts += [f"{name} {_version(name) or '(not installed)'}" for name in (*VERSIONED, *extra)]
    parts += [
        f"{name} {v}" for name in WHEN_INSTALLED if name not in extra and (v := _version(name))
    ]
    return ", ".join(parts)


def _version(name: str) -> str | None:
    """The installed version of package ``name``; None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine() -> str:
    """The CPU: its model (family and model numbers), logical cores, and OpenCV's SIMD line."""
    model = platform.processor() or platform.machine()
    try:
        info: dict[str, str] = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if not key.strip() and info:
                break  # the first processor's block is enough
            info.setdefault(key.strip(), value.strip())
        if "model name" in info:
            model = (
                f"{info['model name']} (family {info.get('cpu family', '?')}, "
                f"model {info.get('model', '?')})"
            )
    except OSError:
        pass
    parts = [f"{model}, {os.cpu_count()} logical cores"]
    try:
        import cv2

        parts.append(f"OpenCV SIMD {simd_line(cv2.getCPUFeaturesLine())}")
    except Exception:  # noqa: BLE001 - a missing or broken cv2 only shortens the line
        pass
    return "; ".join(parts)


def simd_line(features: str) -> str:
    """OpenCV's CPU features line for people: ``SSE *AVX2 *AVX512-SKX?`` (``*`` built for
    dispatch, ``?`` not on this CPU) as ``SSE AVX2 (not on this CPU: AVX512-SKX)``."""
    words = [w.lstrip("*") for w in features.split()]
    have = [w for w in words if not w.endswith("?")]
    missing = [w.rstrip("?") for w in words if w.endswith("?")]
    return " ".join(have) + (f" (not on this CPU: {' '.join(missing)})" if missing else "")
