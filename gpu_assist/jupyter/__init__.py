"""gpu-assist in Jupyter: ipywidgets panels for notebooks, and the server side of the JupyterLab sidebar.

    from gpu_assist.jupyter import assistant; assistant()        # all panels as tabs
    QuotePanel(), RecommendPanel(), UtilizationPanel(), LaunchPanel()

Importing this module imports neither ipywidgets nor jupyter_server: each is loaded where it is used.
"""

from __future__ import annotations

_PANELS = ("QuotePanel", "RecommendPanel", "UtilizationPanel", "LaunchPanel", "assistant")


def __getattr__(name: str):
    if name in _PANELS:
        from . import panels

        return getattr(panels, name)
    raise AttributeError(name)


def _jupyter_server_extension_points():
    return [{"module": "gpu_assist.jupyter"}]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "gpu-assist"}]


def _load_jupyter_server_extension(server_app):
    from .routes import setup_handlers

    setup_handlers(server_app.web_app)
    server_app.log.info("gpu-assist: routes under %sgpu-assist/api/", server_app.web_app.settings["base_url"])


__all__ = list(_PANELS)
