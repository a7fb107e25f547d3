"""Application default credentials (ADC) that evalcheck creates itself and hands to the
google-genai / Vertex AI clients, so that it knows the access tokens they send: a judge or
Vertex endpoint that echoes its request's bearer token in an error body must not get it into
results, reports or logs (checker/safety/redact.py). The google-auth import stays lazy."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"  # what google-genai asks for


class NoApplicationCredentials(Exception):
    """google-auth found no usable application default credentials; the text says why."""


def application_default_credentials() -> Any:
    """``google.auth.default()``'s credentials, scoped as google-genai scopes its own; raises
    NoApplicationCredentials."""
    import google.auth
    from google.auth import exceptions as auth_errors

    try:
        credentials, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except auth_errors.DefaultCredentialsError as exc:
        raise NoApplicationCredentials(str(exc)) from None
    return _remembering_tokens(credentials)


def _remembering_tokens(credentials: Any) -> Any:
    """``credentials``, keeping every access token a refresh gives them (a token lives an hour,
    and one sent before a refresh may still come back in an error body).

    google-auth and the genai clients refresh through the instance's ``refresh`` (blocking,
    or on google-auth's background refresh thread), so wrapping that one method sees them all.
    """
    seen: list[str] = []
    refresh = credentials.refresh

    def refresh_and_remember(request: Any) -> None:
        try:
            refresh(request)
        finally:
            if isinstance(token := getattr(credentials, "token", None), str):
                seen.append(token)

    credentials.refresh = refresh_and_remember
    credentials.evalcheck_tokens = seen
    return credentials


def access_tokens(credentials: Iterable[Any]) -> list[str]:
    """Every access token these credentials held: the current one and each one a refresh
    replaced since they were made (application_default_credentials)."""
    tokens: list[str] = []
    for c in credentials:
        tokens += getattr(c, "evalcheck_tokens", [])
        if isinstance(token := getattr(c, "token", None), str):
            tokens.append(token)
    return list(dict.fromkeys(tokens))
