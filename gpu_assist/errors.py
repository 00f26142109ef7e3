"""The one family of errors a user may see.

Every face (CLI, Slack, Jupyter) catches `GpuAssistError` and shows `str(error)`:
the message says what was wrong and, where it helps, an example that works.
Anything else escaping the core is a bug.
"""

from __future__ import annotations

import re

ECHO_LIMIT = 80
# A quoted echo of the user's own words: 'A1000', 'region=mars', argparse's 'frobnicate'.
_ECHO_RE = re.compile(r"'([^'\n]{%d,})'" % (ECHO_LIMIT + 1))


def shorten_echoes(message: str) -> str:
    """Cut every quoted echo of user input to ECHO_LIMIT characters (ending in …): a 10,000-character
    word must not come back whole in a Slack message or a terminal line."""
    return _ECHO_RE.sub(lambda m: f"'{m.group(1)[:ECHO_LIMIT - 1]}…'", message)


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
        return shorten_echoes(" — ".join(parts))


def apart_from(error: GpuAssistError, said: str) -> GpuAssistError:
    """`error` without its example when the example is the very words that failed (`extend r-0123456789ab 24h`
    answered with `example: extend r-0123456789ab 24h`): an example shows words that work. Faces call it with what
    the user said, as they know it (the CLI's words, Slack's text, a route's verb and `q`); an example written
    without the verb (`8xA100 72h`) is compared with the words after it."""
    words = said.casefold().split()
    if error.example and error.example.casefold().split() in (words, words[1:]):  # with the verb or without
        error.example = None
        error.args = (error.user_message(),)
    return error


class ParseError(GpuAssistError):
    """Text that the command grammar could not read."""


class CatalogError(GpuAssistError):
    """A catalog file that is missing, malformed or inconsistent (names file and line)."""


class PolicyError(GpuAssistError):
    """A request that the team's policy does not allow."""


class ConfigError(GpuAssistError):
    """A setting (an environment variable) gpu-assist cannot use: names the variable, what it takes, an example."""


class ProvisionError(GpuAssistError):
    """A cloud call that failed in a way the user must know about."""
