"""The Bolt app's listeners, one module per thing a person does, as bolt-python's project template lays them out.

`commands` is `/gpu …`; `approvals` the Approve and Reject buttons of an approval card; `quote_buttons` a quote
card's Request launch and More buttons (and the fleet answer's Request stop); `idle_alerts` the Stop, Keep 4 h
and Extend TTL buttons of an idle alert. Each has `register(app, deps)`; what they share is one `Deps`, built
once by `create_app`. Every listener acks at once; a button's click is recorded before its ack and run from the
store (`deps.inbox`, `slackbot/inbox.py`); the words they answer with come from `slackbot/blocks.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import approvals, commands, idle_alerts, quote_buttons
from .deps import Deps

if TYPE_CHECKING:
    from slack_bolt import App


def register(app: App, deps: Deps) -> None:
    """Every listener module's listeners on `app`."""
    for listeners in (commands, approvals, quote_buttons, idle_alerts):
        listeners.register(app, deps)
