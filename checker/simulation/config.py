"""The simulated user's settings: test_config.json's ``user_simulator_config`` (ADK's
``LlmBackedUserSimulatorConfig``), read with the criteria (inputs/criteria.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from ..models.base import AdkConfigModel
from .prompts import TEMPLATE_FIX, check_template


class UserSimulatorConfig(AdkConfigModel):
    type: Literal["llm_backed", "llm_audio"] = "llm_backed"
    model: str = "gemini-2.5-flash"
    model_configuration: dict[str, Any] | None = None
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False
    stop_signal: str = "</finished>"

    @field_validator("type", mode="before")
    @classmethod
    def _legacy_type(cls, value: Any) -> Any:
        return "llm_backed" if value is None else value

    @field_validator("max_allowed_invocations")
    @classmethod
    def _turn_limit(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError("max_allowed_invocations must be at least 1 (the starting prompt "
                             "counts) or -1 for no limit")
        return value

    @field_validator("stop_signal")
    @classmethod
    def _stop_signal(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("stop_signal must not be empty")
        return value

    @field_validator("custom_instructions")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None:
            try:  # as ADK; {{ persona }} is checked where a case has a persona
                check_template(value, with_persona=False)
            except ValueError as exc:
                raise ValueError(f"{exc} ({TEMPLATE_FIX})") from None
        return value
