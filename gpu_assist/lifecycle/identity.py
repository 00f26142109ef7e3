"""Who acts, and whether a front end vouches for it: every actor is written `realm:name`.

    slack:U012ABC          the user id in a request Slack signed (the Slack face)
    jupyter:alice          the Jupyter server's `current_user`, through its token- and XSRF-checked REST routes
    unauthenticated:carol  a name the person could choose: the CLI's `--as`, `GPU_ASSIST_USER`, a kernel's login
    break-glass:root       an operator's override from a shell, allowed only when the policy turns it on
    policy:auto-approve    the policy itself, for launches under `auto_approve_below`
    skypilot:alice         a SkyPilot user, as the team's API server names them to its admin policy (the gate,
                           `gpu_assist.skypilot`): its requests are admitted for SkyPilot to launch, never launched

Only `slack` and `jupyter` are authenticated realms: approvers in the policy must name one, and an actor from any
other realm can submit, quote and list but never counts as an approver. A name means nothing across realms:
`slack:alice` is not `jupyter:alice`.
"""

from __future__ import annotations

import getpass
import os

from ..errors import PolicyError

SLACK, JUPYTER = "slack", "jupyter"
UNAUTHENTICATED, BREAK_GLASS, POLICY, SKYPILOT = "unauthenticated", "break-glass", "policy", "skypilot"
AUTHENTICATED_REALMS = (SLACK, JUPYTER)
REALMS = (SLACK, JUPYTER, UNAUTHENTICATED, BREAK_GLASS, POLICY, SKYPILOT)
AUTO_APPROVE = f"{POLICY}:auto-approve"


def actor(realm: str, name: str) -> str:
    return f"{realm}:{name}"


def realm_of(who: str) -> str | None:
    realm, sep, _ = (who or "").partition(":")
    return realm if sep and realm in REALMS else None


def name_of(who: str) -> str:
    return who.partition(":")[2] if realm_of(who) else who


def authenticated(who: str) -> bool:
    return realm_of(who) in AUTHENTICATED_REALMS


def same_person(one: str, other: str) -> bool:
    """Requester and decider are taken as one person when their names match in any realms: a request made as
    `unauthenticated:bob` is not approved by `jupyter:bob` (refusing a stranger who shares a name is the safe side)."""
    return bool(one) and bool(other) and (one == other or name_of(one).lower() == name_of(other).lower())


def slack_mention(who: str) -> str:
    """`<@U012ABC>` for a Slack actor (Slack renders the person), the actor as written otherwise."""
    return f"<@{name_of(who)}>" if realm_of(who) == SLACK else who


def approver_entry(entry: str) -> str:
    """A policy approver as `realm:name`; a bare entry is a Slack user id (what GPU_ASSIST_APPROVERS always held)."""
    entry = entry.strip()
    realm = realm_of(entry)
    if realm is None:
        if ":" in entry:
            raise PolicyError(f"approver '{entry}' has an unknown realm",
                              hint="approvers are slack:<user id> or jupyter:<user name>", example="slack:U012ABC")
        return actor(SLACK, entry)
    if realm not in AUTHENTICATED_REALMS:
        raise PolicyError(f"approver '{entry}': only identities Slack or Jupyter authenticated can approve",
                          example="slack:U012ABC,jupyter:alice")
    return entry


def chosen_name(flag: str | None = None) -> str:
    """The CLI's or a lone kernel's actor: `--as`, `GPU_ASSIST_USER` or the login, marked unauthenticated."""
    return actor(UNAUTHENTICATED, flag or os.environ.get("GPU_ASSIST_USER") or _login())


def operator_override() -> str:
    """The break-glass actor: the shell's login (audited; it is the policy switch, not this name, that permits)."""
    return actor(BREAK_GLASS, _login())


def _login() -> str:
    """The shell's login."""
    return getpass.getuser()
