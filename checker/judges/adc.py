"""Application default credentials (ADC) that evalcheck creates itself and hands to the
google-genai / Vertex AI clients, so that it knows the access tokens they send: a judge or
Vertex endpoint that echoes its request's bearer token in an error body must not get it into
results, reports or logs (checker/redact.py). The google-auth import stays lazy."""

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
    return credentials


def access_tokens(credentials: Iterable[Any]) -> list[str]:
    """The access tokens these credentials hold now (the ones they sent, unless refreshed
    since: a token lives an hour)."""
    return [token for c in credentials if isinstance(token := getattr(c, "token", None), str)]
