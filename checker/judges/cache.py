"""A content-addressed on-disk cache of judge answers (``--judge-cache DIR``).

The key is the SHA-256 of the canonical JSON of everything that decides an answer: the
judge model, the full prompt, the generation config (response schema included; transport
settings such as ``http_options`` excluded) and the sample index; for a ``provider/model``
judge also the provider and, for ``openai/``, ``azure/`` and Ollama, the base URL of the
server it asked when set (there another server under the same model name may be another
model). Re-running an unchanged
pull request therefore asks the judge nothing. Entries are written atomically (temp file +
rename), so concurrent writers and interrupted runs never leave a torn entry; an unreadable
entry is treated as a miss and overwritten.

Layout: ``DIR/<first 2 hex digits>/<64 hex digits>.json``, each holding the reply text and
its token counts. Delete the folder to start afresh; entries never expire on their own.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .client import JudgeReply

KEY_VERSION = 1


def cache_key(model: str, prompt: str, config: dict[str, Any], sample: int, *,
              provider: str | None = None, base_url: str | None = None) -> str:
    """``provider``/``base_url``: a provider/model judge's provider and the server its
    requests go to when not the provider's own (a Gemini judge's key has neither)."""
    payload: dict[str, Any] = {"v": KEY_VERSION, "model": model, "prompt": prompt,
                               "config": {k: v for k, v in config.items() if k != "http_options"},
                               "sample": sample}
    if provider is not None:
        payload["provider"] = provider
        if base_url:
            payload["base_url"] = base_url
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgeCache:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.write_error: str | None = None

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> JudgeReply | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            if data.get("key") != key:
                return None
            return JudgeReply.from_json(data["reply"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, reply: JudgeReply) -> None:
        """Store an answer; a failure to write is remembered (and reported), never raised."""
        path = self._path(key)
        try:
            try:
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"key": key, "reply": reply.to_json()}, handle, ensure_ascii=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            self.write_error = f"{type(exc).__name__}: {exc}"
