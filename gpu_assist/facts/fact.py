"""The base type of every fact: a small frozen value the core decides by and a renderer words. Pure.

Why `Fact` and not `@dataclass`: a cold quote creates every fact class at import, and a frozen dataclass costs
about 0.4 ms to create (it compiles generated code) where a `Fact` costs microseconds; mypy reads both alike
(`dataclass_transform`): fields in order, positional or by keyword, frozen, equal by type and fields, hashable.
"""

from __future__ import annotations

from typing import Any, ClassVar, dataclass_transform


@dataclass_transform(frozen_default=True, eq_default=True)
class Fact:
    """A fact the core states: immutable, equal by type and fields, hashable, picklable. A subclass declares its
    fields as annotations (a default as a class attribute) and the traits the core decides by as properties."""

    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(name for name, kind in cls.__dict__.get("__annotations__", {}).items()
                    if not str(kind).startswith("ClassVar"))
        cls._fields = cls._fields + own

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if kwargs or len(args) != len(fields):
            args = self._in_order(args, kwargs)
        self.__dict__.update(zip(fields, args))  # not through __setattr__, which refuses: frozen

    def _in_order(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Every field's value in order, from positional and keyword arguments and the class's defaults."""
        if len(args) > len(self._fields):
            raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields")
        values = dict(zip(self._fields, args), **kwargs)
        unknown = values.keys() - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]}")
        missing = [name for name in self._fields if name not in values and not hasattr(type(self), name)]
        if missing:  # a default is a class attribute
            raise TypeError(f"{type(self).__name__} needs {missing[0]}")
        return tuple(values[name] if name in values else getattr(type(self), name) for name in self._fields)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fact) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self._values()))})"

    def __reduce__(self) -> tuple[type[Fact], tuple[Any, ...]]:
        return type(self), self._values()

    def __deepcopy__(self, _memo: dict[int, Any]) -> Fact:
        """Itself: a fact holds only immutable values (`dataclasses.asdict` deep-copies every note it meets)."""
        return self

    # Traits the core decides by, set per class (`_untrusting = True`); a fact that wraps another reads its.
    _untrusting: ClassVar[bool] = False
    _about_trust: ClassVar[bool] = False
    _of_model: ClassVar[bool] = False

    @property
    def untrusting(self) -> bool:
        """Whether this makes a verified price untrusted (ranked after trusted ones)."""
        return self._untrusting

    @property
    def about_trust(self) -> bool:
        """Whether this says why a price is not trusted."""
        return self._about_trust

    @property
    def of_model(self) -> bool:
        """Whether this belongs to a pricing model, not to an offer (a comparison's legend says it per column)."""
        return self._of_model
