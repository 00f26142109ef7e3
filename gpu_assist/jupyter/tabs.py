"""`assistant()`: every notebook panel as a tab. A module of its own: the launch and spend panels build on
`panels.py`, so the function that gathers them all sits above them, not inside `panels.py`. The module is not
named after the function: `from gpu_assist.jupyter import assistant` would then bind the module, not the function
(the package's lazy `__getattr__` imports the submodule, which the import system sets as the package's attribute of
that name)."""

from __future__ import annotations

import ipywidgets as widgets

from ..commands import Context
from .launch_panel import LaunchPanel
from .panels import QuotePanel, RecommendPanel
from .spend_panel import SpendPanel
from .utilization_panel import UtilizationPanel


def assistant(context: Context | None = None) -> widgets.Tab:
    """All five panels as tabs, sharing one context (one catalog load, one store)."""
    context = context or Context()
    tab = widgets.Tab(children=[QuotePanel(context), RecommendPanel(context), UtilizationPanel(),
                                LaunchPanel(context), SpendPanel(context)])
    for index, title in enumerate(("Quote", "Recommend", "Utilization", "Launch", "Spend")):
        tab.set_title(index, title)
    return tab
