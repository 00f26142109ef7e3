"""gpu-assist: GPU prices, plans and utilization across clouds, for Slack, Jupyter and the terminal.

Importing this package is cheap and touches no driver or network: the notebook's API (`gpu_assist.quote(…)`,
`recommend`, `tco`, `spend`, `commit`, `utilization`: `notebook.py`, the command line's verbs as functions that
answer DataFrames) needs pandas and the planner, and is loaded on its first use.
"""

from __future__ import annotations

from typing import Any

from .errors import CatalogError, GpuAssistError, ParseError, PolicyError, ProvisionError

NOTEBOOK_API = ("commit", "quote", "recommend", "spend", "tco", "utilization")
__all__ = ["CatalogError", "GpuAssistError", "ParseError", "PolicyError", "ProvisionError", *NOTEBOOK_API]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`gpu_assist.quote` and the rest of the notebook's API, from `notebook.py` on first use (PEP 562); and
    `from gpu_assist import spot`, the spot watch a training script on a spot instance imports (docs/spot.md),
    which lives with the other adapters to this machine."""
    if name in NOTEBOOK_API:
        from . import notebook  # pandas and the whole core: not for `import gpu_assist`, which every CLI start does

        return getattr(notebook, name)
    if name == "spot":
        from .host import spot_watch  # requests: only for the scripts that watch a spot instance

        return spot_watch
    raise AttributeError(f"module 'gpu_assist' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API's names for a notebook's completion, loaded or not."""
    return sorted({*globals(), *NOTEBOOK_API, "spot"})
