"""The one family of errors a user may see.

Every face (CLI, Slack, Jupyter) catches `GpuAssistError` and shows `str(error)`:
the message says what was wrong and, where it helps, an example that works.
Anything else escaping the core is a bug.
"""

from __future__ import annotations


class GpuAssistError(Exception):
    """Base class: the message is written for the user, not for a developer."""

    def __init__(self, message: str, *, hint: str | None = None, example: str | None = None):
        self.message = message
        self.hint = hint
        self.example = example
        super().__init__(self.user_message())

    def user_message(self) -> str:
        parts = [self.message]
        if self.hint:
            parts.append(self.hint)
        if self.example:
            parts.append(f"example: {self.example}")
        return " — ".join(parts)


class ParseError(GpuAssistError):
    """Text that the command grammar could not read."""


class CatalogError(GpuAssistError):
    """A catalog file that is missing, malformed or inconsistent (names file and line)."""


class PolicyError(GpuAssistError):
    """A request that the team's policy does not allow."""


class ProvisionError(GpuAssistError):
    """A cloud call that failed in a way the user must know about."""
