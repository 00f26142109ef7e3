"""The Slack face of gpu-assist: a Bolt app that translates between Slack and `gpu_assist.commands`."""

from .app import SlackSettings, create_app

__all__ = ["SlackSettings", "create_app"]
