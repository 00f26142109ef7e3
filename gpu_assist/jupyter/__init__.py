"""gpu-assist in Jupyter: ipywidgets panels for notebooks, and the server side of the JupyterLab sidebar.

    from gpu_assist.jupyter import assistant; assistant()        # all panels as tabs
    QuotePanel(), RecommendPanel(), UtilizationPanel(), LaunchPanel()

Importing this module imports neither ipywidgets nor jupyter_server: a kernel loads the panels' module when it
names a panel, the server its routes when it loads the extension.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..commands import Context
from ..errors import GpuAssistError

_PANELS = {"QuotePanel": "panels", "RecommendPanel": "panels", "assistant": "tabs", "SpendPanel": "spend_panel",
           "UtilizationPanel": "utilization_panel", "LaunchPanel": "launch_panel"}


def __getattr__(name: str) -> Any:
    if name in _PANELS:
        return getattr(importlib.import_module(f"{__name__}.{_PANELS[name]}"), name)
    raise AttributeError(name)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "gpu_assist.jupyter"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "gpu-assist"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    """Routes, and the store's schema upgraded before they serve. A store that cannot be opened, or a bad
    `GPU_ASSIST_JUPYTER_TIMEOUT_S`, is logged, not fatal: the notebook server keeps serving, the routes retry the
    store on use and wait their own limits."""
    from .routes import setup_handlers, timeout_setting  # jupyter_server: a kernel that imports the panels has none

    context = Context()
    try:
        context.prepare()
    except GpuAssistError as error:
        server_app.log.error("gpu-assist: %s", error)
    except Exception as error:  # noqa: BLE001 - e.g. the database is down; one line, no traceback, no URL
        server_app.log.error("gpu-assist: cannot open the request store (%s); retrying on use",
                             type(error).__name__)
    try:
        timeout_cap_s = timeout_setting()
    except GpuAssistError as error:
        server_app.log.error("gpu-assist: %s", error)
        timeout_cap_s = None
    setup_handlers(server_app.web_app, context, timeout_cap_s=timeout_cap_s)
    server_app.log.info("gpu-assist: routes under %sgpu-assist/api/", server_app.web_app.settings["base_url"])


__all__ = list(_PANELS)
