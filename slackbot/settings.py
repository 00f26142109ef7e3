"""The Slack app's settings from the environment: a module of its own, so the listeners name the type without
importing the app that registers them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_assist.errors import GpuAssistError


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str
    signing_secret: str
    api_url: str = "https://slack.com/api/"
    approval_channel: str | None = None
    app_token: str | None = None

    def __repr__(self) -> str:  # secrets never reach a log line
        return f"SlackSettings(api_url={self.api_url!r}, approval_channel={self.approval_channel!r})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> SlackSettings:
        missing = [name for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET") if not environ.get(name)]
        if missing:
            raise GpuAssistError(f"missing {', '.join(missing)}",
                                 hint="create the app from slackbot/manifest.yml and export its credentials")
        api_url = environ.get("GPU_ASSIST_SLACK_API_URL") or "https://slack.com/api/"
        return cls(bot_token=environ["SLACK_BOT_TOKEN"], signing_secret=environ["SLACK_SIGNING_SECRET"],
                   api_url=api_url if api_url.endswith("/") else api_url + "/",
                   approval_channel=environ.get("GPU_ASSIST_APPROVAL_CHANNEL") or None,
                   app_token=environ.get("SLACK_APP_TOKEN") or None)
