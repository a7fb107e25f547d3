"""Which failures of an agent's first turn are setup errors, not the agent's quality.

A model SDK that finds no credentials, or a model API that refuses the key, fails every
run the same way before the agent answers anything; no change to the agent's code is at
fault, and reporting it once per case and run (exit 1, as a failed gate) hides the fix.
The texts matched are the SDKs' own (google-genai, google-auth, openai, anthropic, litellm)
and the model APIs' error statuses, case-sensitive so that an agent's prose does not match.
Pure: no imports beyond the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CREDENTIALS_FIX = ("give the agent's model its credentials in the environment evalcheck runs "
                    "in: for Gemini, GOOGLE_API_KEY (or GEMINI_API_KEY), or for Vertex AI "
                    "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT, "
                    "GOOGLE_CLOUD_LOCATION and application default credentials; in the Action, "
                    "the step's env from a secret; an ADK agent folder's .env is read too")
_AUTH_FIX = ("check the key or credentials the agent's model uses (a revoked, mistyped or "
             "other project's key; an API not enabled for the project)")

# (kind, what it is, patterns, the fix). The first kind that matches wins.
_KINDS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("credentials", "the agent has no model credentials",
     (r"No API key was provided",                       # google-genai, Gemini API
      r"Missing key inputs argument",                   # older google-genai
      r"Project or API key must be set",                # google-genai, Vertex AI
      r"Could not resolve project using application default credentials",
      r"DefaultCredentialsError",                       # google-auth, no ADC
      r"default credentials were not found",
      r"api_key client option must be set",             # openai
      r"Could not resolve authentication method",       # anthropic
      r"Missing credentials\. Please pass an `api_key`"),
     _CREDENTIALS_FIX),
    ("authentication", "the agent's model refused its credentials",
     (r"API_KEY_INVALID", r"API key not valid", r"API key expired",
      r"\b401 UNAUTHENTICATED\b", r"\b403 PERMISSION_DENIED\b",
      r"\"status\": ?\"UNAUTHENTICATED\"", r"'status': 'UNAUTHENTICATED'",
      r"\"status\": ?\"PERMISSION_DENIED\"", r"'status': 'PERMISSION_DENIED'",
      r"\bAuthenticationError\b", r"Incorrect API key provided", r"invalid x-api-key",
      r"\binvalid_api_key\b"),
     _AUTH_FIX),
)
_COMPILED = tuple((kind, what, re.compile("|".join(patterns)), fix)
                  for kind, what, patterns, fix in _KINDS)


@dataclass(frozen=True)
class SetupProblem:
    kind: str        # "credentials" | "authentication": runs agree when their kinds do
    what: str        # "the agent has no model credentials"
    evidence: str    # the line that says so (from the run's error or its agent's log)
    fix: str


def setup_problem(error: str | None, log: str | None = None) -> SetupProblem | None:
    """The setup problem a run's ``error`` (or the last lines of its agent's ``log``) shows,
    or None. A simulated user's failure is not the agent's (it has its own messages)."""
    if not error or error.startswith(("simulated user", "no Gemini credentials for the simulated")):
        return None
    lines = [error, *reversed((log or "").splitlines()[-30:])]  # the log's newest line first
    for kind, what, pattern, fix in _COMPILED:
        for line in lines:
            if pattern.search(line):
                return SetupProblem(kind, what, line.strip(), fix)
    return None
