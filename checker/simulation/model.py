"""The simulated user's model calls, through the judges' clients (Gemini, or a provider/model
name: judges/providers.py) and service."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..judges.client import (CallStats, JudgeConfigError, JudgeCredentialsRefused, JudgeError,
                             JudgeUnavailable)
from ..judges.service import JudgeRequest, JudgeService
from .simulator import ModelReply, SimulatorError


def _for_simulated_user(exc: JudgeConfigError) -> SimulatorError:
    """The judge service's credentials message, about the simulated user instead."""
    text = str(exc)
    whose = "Gemini credentials" if "GOOGLE_API_KEY" in text else "credentials"
    return SimulatorError(text.replace("no judge credentials",
                                       f"no {whose} for the simulated user", 1))


def _about_model(text: str) -> str:
    """A judge client message, about the simulator's model instead."""
    for judge, model in (("judge call", "model call"), ("judge request", "model request"),
                         ("the judge", "the model"), ("judge asked", "model asked")):
        text = text.replace(judge, model)
    return text


@dataclass
class SimulatorStats(CallStats):
    """The simulated users' traffic of one evalcheck run (reported apart from the judges'),
    and the credentials it sent (redacted from results and logs, as the judges' are)."""

    credentials: set[str] = field(default_factory=set)

    def used(self) -> bool:
        return self.calls > 0

    def as_metadata(self) -> dict[str, Any]:
        return {"calls": self.calls, "retries": self.retries,
                "failedRequests": self.failed_requests, "tokens": self.total_tokens,
                "promptTokens": self.prompt_tokens, "outputTokens": self.output_tokens}

    def line(self) -> str:
        return (f"user simulator: {self.calls:,} call{'s' if self.calls != 1 else ''}, "
                f"{self.total_tokens:,} tokens")


class JudgeServiceModel:
    """A UserModel on a JudgeService: its credentials, base URL, retries and concurrency
    limit, none of its caching."""

    def __init__(self, service: JudgeService, stats: SimulatorStats | None = None):
        self.service = service
        self.stats = stats if stats is not None else SimulatorStats()

    async def ask(self, model: str, prompt: str, config: dict[str, Any]) -> ModelReply:
        try:
            reply = await self.service.generate(JudgeRequest(model, prompt, config), self.stats)
        except JudgeCredentialsRefused as exc:  # the service said no to the key
            raise SimulatorError("simulated user: " + _about_model(str(exc))) from None
        except JudgeConfigError as exc:
            raise _for_simulated_user(exc) from None
        except JudgeUnavailable as exc:  # its model service kept refusing: no run of the agent's
            raise SimulatorError("simulated user: " + _about_model(str(exc)), refused=exc.code) from None
        except JudgeError as exc:
            raise SimulatorError("simulated user: " + _about_model(str(exc))) from None
        except Exception as exc:  # a bad model_configuration the SDK rejects, and the like
            raise SimulatorError(f"simulated user: model call failed: "
                                 f"{type(exc).__name__}: {exc}") from None
        return ModelReply(text=reply.text, finish_reason=reply.finish_reason,
                          thoughts=reply.thoughts)

    def check_credentials(self, base_url: str | None = None, model: str | None = None) -> None:
        """Fail fast, before the agent starts, when the model cannot be reached at all."""
        try:
            self.service.ensure_client(base_url, model)
        except JudgeConfigError as exc:
            raise _for_simulated_user(exc) from None
