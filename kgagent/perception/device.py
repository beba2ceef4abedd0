"""``perception.device`` as a torch device, refused in one line when this machine lacks it.

The config check (:func:`kgagent.config_checks.torch_device`) has already refused a
name torch does not know; what remains is a device this machine does not have, which
torch would report only when the model is moved there, with a traceback.
"""

from __future__ import annotations

from typing import Any

from kgagent.errors import ConfigError


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
