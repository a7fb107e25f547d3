"""Secret values never reach a report or a log line.

The values of known secret variables (the judge's API keys, the GitHub token, any
``*_KEY`` / ``*_TOKEN`` / ``*_SECRET`` / ``*_PASSWORD`` / ``*_CREDENTIALS`` variable) and any credential the
judge client was given are replaced by ``***`` in every string that came from outside
(agent output, judge errors, server bodies) before results, reports or logs are written:
``Redactor.model`` on the results and recorded runs (before any rendering, so markdown
escaping cannot hide a secret from it) and ``Redactor.text`` on every printed line
(checker/safety/output.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from .logtext import neutralise  # how a log line shows a secret ("a::b" -> "a: :b")

if TYPE_CHECKING:  # pydantic itself is not needed to redact text (evalcheck --help stays fast)
    from pydantic import BaseModel

MASK = "***"
MIN_LENGTH = 6  # shorter values ("true", "1") would blank out ordinary words
SECRET_VARIABLES = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN",
                    "INPUT_GITHUB-TOKEN", "ACTIONS_RUNTIME_TOKEN",
                    "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
# Named like a secret: *_API_KEY, *_KEY (OPENAI_KEY, AWS_SECRET_ACCESS_KEY, *_PRIVATE_KEY),
# *_TOKEN, *_SECRET, *_PASSWORD / *_PASSWD, *_CREDENTIALS.
_SECRET_NAME = re.compile(r"(?:^|[_-])(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$",
                          re.IGNORECASE)
# Named so, but holding a path: hiding it would blank paths out of messages, not a secret.
# And the comment-key input under its bare name, as nektos/act passes every input besides
# INPUT_*: a setting (the github-token input's value is a secret under its INPUT_ name).
_NOT_SECRET = frozenset({"GOOGLE_APPLICATION_CREDENTIALS", "COMMENT-KEY"})

M = TypeVar("M", bound="BaseModel")


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The values of ``env``'s secret variables (known names, or named like a secret)."""
    return [value for name, value in env.items()
            if value and (name in SECRET_VARIABLES or _named_like_a_secret(name))]


def _named_like_a_secret(name: str) -> bool:
    # The Action's inputs (INPUT_COMMENT-KEY ...) are settings, not secrets; the one that
    # is, the github-token, is a known name above.
    upper = name.upper()
    return (bool(_SECRET_NAME.search(name)) and upper not in _NOT_SECRET
            and not upper.startswith("INPUT_"))


CUT = "\u2026"  # what marks text cut short (a clipped line, a stderr tail's start)
FRAGMENT = 8  # shortest piece of a secret hidden where text was cut


class Redactor:
    """Replaces known secret values (and their JSON-escaped, URL-escaped and log-escaped
    forms) by ``***``, and what is left of one where text was cut through it: a piece of
    at least FRAGMENT characters at the start or end of the text, or next to ``…``."""

    def __init__(self, secrets: Iterable[str] = ()):
        self._secrets: set[str] = set()
        self._raw: set[str] = set()
        self._grams: set[str] = set()  # every FRAGMENT-long window of a secret
        self._pattern: re.Pattern[str] | None = None
        self.add(*secrets)

    def add(self, *values: str | None) -> None:
        forms = set()
        for value in values:
            value = (value or "").strip()
            if len(value) < MIN_LENGTH:
                continue
            forms |= {value, json.dumps(value)[1:-1], quote(value, safe=""), neutralise(value)}
            if value not in self._raw and len(value) > FRAGMENT:
                self._raw.add(value)
                self._grams.update(value[i:i + FRAGMENT] for i in range(len(value) - FRAGMENT + 1))
        if forms - self._secrets:
            self._secrets |= forms
            # Longest first: a secret that contains another is hidden whole.
            ordered = sorted(self._secrets, key=len, reverse=True)
            # In any case: a swapped case is the secret, readable back.
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered), re.IGNORECASE)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._cut_pieces(self._pattern.sub(MASK, text))

    def _cut_pieces(self, text: str) -> str:
        """Hide a secret's piece left by a cut: one that ends the text (or a ``…``), or
        starts it (or follows a ``…``). A window lookup first: most text has none."""
        spans = []
        cuts = [i for i, ch in enumerate(text) if ch == CUT] if CUT in text else []
        for end in (len(text), *cuts):
            if text[max(0, end - FRAGMENT):end] in self._grams:
                k = max((k for raw in self._raw for k in range(FRAGMENT, min(len(raw), end + 1))
                         if text.startswith(raw[:k], end - k)), default=0)
                if k:
                    spans.append((end - k, end))
        for start in (0, *(i + 1 for i in cuts)):
            if text[start:start + FRAGMENT] in self._grams:
                k = max((k for raw in self._raw for k in range(FRAGMENT, min(len(raw), len(text) - start + 1))
                         if text.startswith(raw[-k:], start)), default=0)
                if k:
                    spans.append((start, start + k))
        for a, b in sorted(set(spans), reverse=True):
            text = text[:a] + MASK + text[b:]
        return text

    def data(self, value: Any) -> Any:
        """``value`` (JSON-like: dicts, lists, strings) with every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def model(self, model: M) -> M:
        """A copy of ``model`` with every string redacted (the same object if none held a
        secret)."""
        if self._pattern is None:
            return model
        data = model.model_dump(mode="json")
        cleaned = self.data(data)
        if cleaned == data:
            return model
        return type(model).model_validate(cleaned)
