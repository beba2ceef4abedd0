"""kgagent: an API-free GUI agent with a persistent State-Action Knowledge Graph."""

__version__ = "0.1.0"

from kgagent.config import Config  # noqa: E402

__all__ = ["Config", "__version__"]
