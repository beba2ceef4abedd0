"""``perception.device`` as a torch device, refused in one line when this machine lacks it.

The config check (:func:`kgagent.config_checks.torch_device`) has already refused a
name torch does not know; what remains is a device this machine does not have, which
torch would report only when the model is moved there, with a traceback.
"""

from __future__ import annotations

import importlib
from typing import Any

from kgagent.errors import ConfigError, WeightsUnavailable

#: How to install what CLIP and SAM need (pyproject.toml's ``models`` extra).
MODELS_EXTRA = "pip install 'kgagent[models]'"


def model_libraries(what: str, *names: str) -> list[Any]:
    """The modules ``names`` (torch, open_clip, segment_anything), imported for ``what``
    (``perception.encoder=clip``); one line naming the extra when one is not installed,
    or saying why it does not import (a torch and a torchvision that do not fit)."""
    mods = []
    for name in names:
        try:
            mods.append(importlib.import_module(name))
        except ImportError as e:
            if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == name:
                why = f"the {name} package, which is not installed: {MODELS_EXTRA}"
            else:
                why = (
                    f"the {name} package, which does not import ({e}); reinstall it: {MODELS_EXTRA}"
                )
            raise WeightsUnavailable(f"{what} needs {why}") from None
    return mods


def torch_device(name: str) -> Any:
    import torch

    dev = torch.device(name)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(
                f"perception.device={name!r} but no CUDA device is available; use 'cpu'"
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ConfigError(
                f"perception.device={name!r} but this machine has {count} CUDA device(s), "
                f"cuda:0 to cuda:{count - 1}; use one of them or 'cpu'"
            )
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(
            f"perception.device={name!r} but MPS (Apple GPU) is not available; use 'cpu'"
        )
    elif dev.type == "xpu" and not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        raise ConfigError(f"perception.device={name!r} but no XPU device is available; use 'cpu'")
    return dev
