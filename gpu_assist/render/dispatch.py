"""Renderers registered for a result type named, not imported.

Each renderer picks its function by the result's type (`functools.singledispatch`), one function per result type
and medium. Registering needs the class, and importing every result's module to get it would make a quote load
recommend, tco, the fleet, spend and the request store's records only to print a price table (#17). So a renderer
names the class instead: `@register_by_name(render, "gpu_assist.tco.TcoResult")` registers the function for
`TcoResult` as soon as `gpu_assist.tco` is imported, at once if it already is, otherwise when the renderer is
next asked for a type it has no function for (its default calls `register_imported`). No instance of a class can
exist before its module is imported, so every call dispatches exactly as if all the modules had been imported
first; nothing here imports a module.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

Function = TypeVar("Function", bound=Callable[..., Any])

# Per generic function: (module name, class name, function) not yet registered, their module not imported then.
_pending: dict[Any, list[tuple[str, str, Callable[..., Any]]]] = {}
_lock = threading.Lock()


def register_by_name(generic: Any, type_name: str) -> Callable[[Function], Function]:
    """Decorator: register the function on `generic` for the class `type_name` (`module.Class`) once its module
    is imported."""
    module, _, name = type_name.rpartition(".")

    def register(function: Function) -> Function:
        with _lock:
            _pending.setdefault(generic, []).append((module, name, function))
        register_imported(generic)
        return function

    return register


def register_imported(generic: Any) -> bool:
    """Register the named functions of `generic` whose class is imported by now; True when any was."""
    with _lock:
        ready, waiting = [], []
        for module, name, function in _pending.get(generic, []):
            cls = getattr(sys.modules.get(module), name, None)  # None too while its module is still being imported
            if cls is None:
                waiting.append((module, name, function))
            else:
                ready.append((cls, function))
        _pending[generic] = waiting
    for cls, function in ready:
        generic.register(cls, function)
    return bool(ready)


def registered_for(generic: Any, cls: type) -> bool:
    """Whether `generic` has a function of its own for `cls`, once the named functions whose modules are imported
    by now are registered. It asks the registry, not whether this call registered anything: another thread may
    have registered that very function a moment before (the first commands after a start arrive together)."""
    register_imported(generic)
    return generic.dispatch(cls) is not generic.registry[object]
