"""OAuth 2.0 access tokens as JWTs: signature, expiry, audience and issuer, then scopes.

The signing key is configured, never fetched (no JWKS, no network): an HMAC shared
secret for HS256/384/512, or the authorization server's PEM public key (or certificate)
for RS*/PS*/ES*. Settings (the ``jwt`` table of the config file)::

    secret | public_key | public_key_file   exactly one of them
    audience          required: this server's audience, a string or a list
    issuer            optional: the only accepted `iss`
    algorithms        default: HS256 with a secret, RS256 with a public key
    scope_claim       default "scope" (space-separated string, or a list as in `scp`)
    read_scope        default "nsframe:read"
    write_scope       default "nsframe:write"
    namespace_claim   default "nsframe_namespace": a namespace prefix the token is limited to
    database_claim    default "nsframe_databases": databases the token may use
    leeway_seconds    default 0: clock skew tolerated on exp/nbf
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from nsframe.exceptions import ForbiddenError, UnauthorizedError
from nsframe.server._security.scopes import Scope

HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
PUBLIC_KEY_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                         "ES256", "ES384", "ES512")
MIN_SECRET_BYTES = 32
SETTINGS = frozenset({
    "secret", "public_key", "public_key_file", "audience", "issuer", "algorithms",
    "scope_claim", "read_scope", "write_scope", "namespace_claim", "database_claim",
    "leeway_seconds",
})


def _load_public_key(pem: str) -> Any:
    data = pem.encode("utf-8")
    try:
        if b"CERTIFICATE" in data:
            return x509.load_pem_x509_certificate(data).public_key()
        return serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise ValueError(
            "jwt: public_key is not a PEM public key or certificate "
            "('-----BEGIN PUBLIC KEY-----...')"
        ) from exc


@dataclass(frozen=True)
class JWTVerifier:
    """Checks bearer JWTs; built once from the ``jwt`` settings."""

    key: Any = field(repr=False)
    algorithms: tuple[str, ...]
    audience: str | tuple[str, ...]
    issuer: str | None = None
    scope_claim: str = "scope"
    read_scope: str = "nsframe:read"
    write_scope: str = "nsframe:write"
    namespace_claim: str = "nsframe_namespace"
    database_claim: str = "nsframe_databases"
    leeway: float = 0.0

    @classmethod
    def from_settings(cls, raw: Mapping[str, Any]) -> JWTVerifier:
        unknown = set(raw) - SETTINGS
        if unknown:
            raise ValueError(
                f"jwt: unknown setting(s) {sorted(unknown)}; known: {sorted(SETTINGS)}"
            )
        sources = [k for k in ("secret", "public_key", "public_key_file") if raw.get(k)]
        if len(sources) != 1:
            raise ValueError("jwt: give exactly one of secret, public_key or public_key_file")
        audience = raw.get("audience")
        if not audience or not isinstance(audience, (str, list, tuple)):
            raise ValueError(
                "jwt: audience is required (the `aud` your authorization server puts in "
                "tokens meant for this server)"
            )
        key: Any
        allowed: tuple[str, ...]
        if sources[0] == "secret":
            key = str(raw["secret"])
            if len(key.encode("utf-8")) < MIN_SECRET_BYTES:
                raise ValueError(
                    f"jwt: the shared secret must be at least {MIN_SECRET_BYTES} bytes"
                )
            allowed, default = HMAC_ALGORITHMS, ("HS256",)
        else:
            text = raw.get("public_key") or Path(raw["public_key_file"]).read_text("utf-8")
            key = _load_public_key(str(text))
            allowed, default = PUBLIC_KEY_ALGORITHMS, ("RS256",)
        algorithms = tuple(raw.get("algorithms") or default)
        # A public key must never verify an HMAC token (algorithm confusion), nor the reverse.
        wrong = [a for a in algorithms if a not in allowed]
        if wrong:
            raise ValueError(f"jwt: algorithm(s) {wrong} do not fit a {sources[0]}; use {allowed}")
        return cls(
            key=key,
            algorithms=algorithms,
            audience=audience if isinstance(audience, str) else tuple(audience),
            issuer=raw.get("issuer"),
            scope_claim=str(raw.get("scope_claim", "scope")),
            read_scope=str(raw.get("read_scope", "nsframe:read")),
            write_scope=str(raw.get("write_scope", "nsframe:write")),
            namespace_claim=str(raw.get("namespace_claim", "nsframe_namespace")),
            database_claim=str(raw.get("database_claim", "nsframe_databases")),
            leeway=float(raw.get("leeway_seconds", 0)),
        )

    def verify(self, token: str) -> tuple[str, Scope]:
        """The subject and scope of a valid token; `UnauthorizedError` otherwise."""
        try:
            claims = jwt.decode(
                token,
                self.key,
                algorithms=list(self.algorithms),
                audience=self.audience if isinstance(self.audience, str) else list(self.audience),
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "aud"] + (["iss"] if self.issuer else [])},
            )
        except jwt.ExpiredSignatureError as exc:
            raise UnauthorizedError(
                "The bearer token has expired: get a new access token."
            ) from exc
        except jwt.InvalidAudienceError as exc:
            raise UnauthorizedError(
                "The bearer token is meant for another audience than this server."
            ) from exc
        except jwt.InvalidIssuerError as exc:
            raise UnauthorizedError("The bearer token comes from an issuer this server does "
                                    "not trust.") from exc
        except jwt.MissingRequiredClaimError as exc:
            raise UnauthorizedError(
                f"The bearer token lacks the {exc.claim!r} claim this server requires."
            ) from exc
        except jwt.PyJWTError as exc:
            raise UnauthorizedError("The bearer token is not valid.") from exc
        return str(claims.get("sub") or "jwt"), self._scope(claims)

    def _scope(self, claims: Mapping[str, Any]) -> Scope:
        raw = claims.get(self.scope_claim, "")
        granted = set(raw.split() if isinstance(raw, str) else raw if isinstance(raw, list) else [])
        if self.write_scope in granted:
            read_only = False
        elif self.read_scope in granted:
            read_only = True
        else:
            raise ForbiddenError(
                f"The bearer token grants neither {self.read_scope!r} nor {self.write_scope!r}: "
                "ask your authorization server for one of these scopes."
            )
        try:
            return Scope.from_mapping({
                "read_only": read_only,
                "namespace": claims.get(self.namespace_claim),
                "databases": claims.get(self.database_claim),
            }, "bearer token claims")
        except ValueError as exc:
            raise ForbiddenError(f"The bearer token's claims are malformed: {exc}.") from exc
