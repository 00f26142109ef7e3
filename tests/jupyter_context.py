"""A started Jupyter server's gpu-assist routes on a Context whose clocks the test holds.

The server extension builds its own Context on the real clock; `pin_context` puts in its place one on the bundled
catalog where a quote's date, spend's `now` and the request lifecycle's clock all read one `support.Clock`, so no
answer depends on the day the tests run. The store, policy and AWS come from the environment, as the extension's."""

from __future__ import annotations

from support import Clock

from gpu_assist.commands import Context


def pin_context(serverapp, catalog, clock: Clock, **fields) -> Context:
    """Serve the routes of `serverapp` from a prepared Context on `catalog` and `clock` (and any other `fields` of
    a Context: a sampler, say); returns it."""
    def approvals(context: Context):
        from gpu_assist.clouds.launch.aws import AwsProvisioner
        from gpu_assist.lifecycle.approvals import Approvals
        from gpu_assist.lifecycle.policy import load_policy
        from gpu_assist.store import Store

        policy = load_policy()
        return Approvals(Store(), policy, AwsProvisioner(policy), context.catalog, clock=context.now)

    context = Context(catalog_loader=lambda: catalog, now=clock, today=lambda: clock().date(),
                      approvals_factory=approvals, **fields).prepare()
    serverapp.web_app.settings["gpu_assist_context"] = context
    return context
