"""Renderers, one per medium; no face formats numbers on its own."""

from .money import format_money, format_percent

__all__ = ["format_money", "format_percent"]
