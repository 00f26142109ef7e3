"""A Jupyter identity provider for the tests: each API token names one user, as JupyterHub's tokens do.

jupyter_server calls `get_user_token` for every request; a token it does not know is no user (403)."""

from __future__ import annotations

from jupyter_server.auth.identity import IdentityProvider, User
from traitlets import Dict

TOKENS = {"token-alice": "alice", "token-bob": "bob", "token-carol": "carol"}


class TokenUsers(IdentityProvider):
    users = Dict(TOKENS, config=True)

    def get_user_token(self, handler):
        scheme, _, token = handler.request.headers.get("Authorization", "").partition(" ")
        name = self.users.get(token.strip()) if scheme.lower() == "token" else None
        return User(username=name, name=name) if name else None


def auth(user: str) -> dict:
    return {"Authorization": f"token token-{user}"}
