"""The Slack face of gpu-assist: a Bolt app that translates between Slack and `gpu_assist.commands`."""

from .app import create_app
from .settings import SlackSettings

__all__ = ["SlackSettings", "create_app"]
