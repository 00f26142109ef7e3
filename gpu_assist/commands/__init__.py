"""One command grammar for every face: `quote 8xA100 72h spot top=5`, `help`.

The Slack text after `/gpu`, the CLI's arguments and the Jupyter widgets' inputs all become the command objects
of `objects.py` (parsed once, at the face: `grammar.py` reads words, a face with typed inputs builds the objects
with the grammar's own value parsers) and run through `execute.run`, so every face gives the same numbers. A quote's
words and answer are `quote_grammar.py` and `quoting.py`, apart so that the CLI's quote loads no other verb's core,
and the store verbs' (`requests`, `spend`, `commit`) `team_grammar.py` and `team_verbs.py`, for the same reason;
`context.py` holds what commands need from outside. This package exports the command objects and the context
only: importing it costs a quote nothing it does not use.
"""

from .context import Context
from .objects import (
    HELP,
    Command,
    CommitCommand,
    ExtendCommand,
    HelpCommand,
    LaunchCommand,
    QuoteCommand,
    RecommendCommand,
    RequestDetail,
    RequestsCommand,
    Result,
    SpendCommand,
    StopCommand,
    TcoCommand,
    UtilCommand,
)

__all__ = ["HELP", "Command", "CommitCommand", "Context", "ExtendCommand", "HelpCommand", "LaunchCommand",
           "QuoteCommand", "RecommendCommand", "RequestDetail", "RequestsCommand", "Result", "SpendCommand",
           "StopCommand", "TcoCommand", "UtilCommand"]
