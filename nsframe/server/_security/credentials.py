"""The credentials a server accepts: API keys, static bearer tokens and JWTs.

Secrets are kept only as SHA-256 digests, so nothing this module holds can be logged or
printed back; the name of a credential (for the access log) is its configured ``name``
or its position, never its value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nsframe.exceptions import UnauthorizedError
from nsframe.server._config import ServerConfig
from nsframe.server._security.jwt import JWTVerifier
from nsframe.server._security.scopes import Scope

BEARER_CHALLENGE = 'Bearer realm="nsframe"'


@dataclass(frozen=True)
class Principal:
    """Who sent a request (a name safe to log) and what it may do."""

    name: str
    scope: Scope


ANONYMOUS = Principal("anonymous", Scope())


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def _index(entries: Mapping[str, Mapping[str, Any]], kind: str) -> dict[bytes, Principal]:
    index: dict[bytes, Principal] = {}
    for number, (secret, raw) in enumerate(entries.items(), start=1):
        if not secret:
            raise ValueError(f"{kind} #{number} is empty")
        settings = dict(raw)
        name = str(settings.pop("name", f"{kind}#{number}"))
        index[_digest(secret)] = Principal(name, Scope.from_mapping(settings, f"{kind} {name!r}"))
    return index


def unauthorized(detail: str, *, invalid_token: bool = False) -> UnauthorizedError:
    challenge = BEARER_CHALLENGE + (', error="invalid_token"' if invalid_token else "")
    return UnauthorizedError(detail, headers={"WWW-Authenticate": challenge})


class Credentials:
    """Checks the credential of a request; built once per app from its config."""

    def __init__(self, config: ServerConfig) -> None:
        self.required = config.credentials_configured
        self._keys = _index(config.api_keys, "api key")
        self._tokens = _index(config.tokens, "token")
        self._jwt = JWTVerifier.from_settings(config.jwt) if config.jwt else None

    def __repr__(self) -> str:
        return (f"Credentials(api_keys=<{len(self._keys)}>, tokens=<{len(self._tokens)}>, "
                f"jwt={self._jwt is not None})")

    def authenticate(self, api_key: str | None, bearer: str | None) -> Principal:
        """The principal of a request; ``api_key`` wins when both are given.

        Raises `UnauthorizedError` (401, with a Bearer challenge) when the credential is
        missing or not valid; the detail never repeats the credential.
        """
        if not self.required:
            return ANONYMOUS
        if api_key:
            found = self._keys.get(_digest(api_key))
            if found is None:
                raise unauthorized("The API key is not valid for this server.")
            return found
        if bearer:
            found = self._tokens.get(_digest(bearer))
            if found is not None:
                return found
            if self._jwt is not None and bearer.count(".") == 2:
                try:
                    subject, scope = self._jwt.verify(bearer)
                except UnauthorizedError as exc:
                    raise unauthorized(exc.detail, invalid_token=True) from None
                return Principal(f"jwt:{subject}", scope)
            raise unauthorized("The bearer token is not valid for this server.",
                               invalid_token=True)
        raise unauthorized(
            "This server needs credentials: send an API key in the x-api-key header, or a "
            "token as 'Authorization: Bearer <token>' (or identity.api_key / "
            "identity.auth_token in a JSON body)."
        )
