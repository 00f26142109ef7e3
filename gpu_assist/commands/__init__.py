"""One command grammar for every face: `quote 8xA100 72h spot top=5`, `help`.

The Slack text after `/gpu`, the CLI's arguments and the Jupyter widgets' inputs all become the command objects
of `objects.py` (parsed once, at the face: `grammar.py` reads words, a face with typed inputs builds the objects
with the grammar's own value parsers) and run through `run()` (`execute.py`), so every face gives the same numbers.
`context.py` holds what commands need from outside.
"""

from .context import Context
from .execute import run, spend_of
from .quoting import quote_view
from .grammar import parse_command, parse_quote, parse_recommend, parse_verb, words_of
from .objects import (HELP, Command, CommitCommand, ExtendCommand, HelpCommand, LaunchCommand, QuoteCommand,
                      RecommendCommand, RequestDetail, RequestsCommand, Result, SpendCommand, StopCommand, TcoCommand,
                      UtilCommand)

__all__ = ["HELP", "Command", "CommitCommand", "Context", "ExtendCommand", "HelpCommand", "LaunchCommand",
           "QuoteCommand", "RecommendCommand", "RequestDetail", "RequestsCommand", "Result", "SpendCommand",
           "StopCommand", "TcoCommand", "UtilCommand", "parse_command", "parse_quote", "parse_recommend", "parse_verb",
           "quote_view", "run", "spend_of", "words_of"]
