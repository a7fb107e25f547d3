"""Fixtures of the Vertex AI metric tests: a fake service and a clean credential environment."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_vertex import FakeVertex  # noqa: E402

CREDENTIAL_VARS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT",
                   "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
                   "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
                   "GOOGLE_VERTEX_BASE_URL")


@pytest.fixture
def fake() -> Iterator[FakeVertex]:
    server = FakeVertex().start()
    yield server
    server.stop()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No Google credentials from the machine; gcloud's config points at an empty folder."""
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return monkeypatch


@pytest.fixture
def express(clean_env: pytest.MonkeyPatch, fake: FakeVertex) -> FakeVertex:
    """GOOGLE_API_KEY only: Vertex AI express mode against the fake."""
    clean_env.setenv("GOOGLE_API_KEY", fake.api_key)
    clean_env.setenv("GOOGLE_VERTEX_BASE_URL", fake.url)
    return fake


@pytest.fixture
def project(clean_env: pytest.MonkeyPatch, fake: FakeVertex, tmp_path: Path) -> FakeVertex:
    """Project + location with application default credentials from a file.

    An authorized-user file whose access token is still valid: google-auth uses it as is,
    so no token endpoint is called and the real ADC path runs without network.
    """
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps({
        "type": "authorized_user", "client_id": "id", "client_secret": "secret",
        "refresh_token": "refresh", "token": fake.token, "expiry": "2099-01-01T00:00:00Z"}))
    clean_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    fake.adc_file = str(adc)
    clean_env.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    clean_env.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    clean_env.setenv("GOOGLE_VERTEX_BASE_URL", fake.url)
    return fake
