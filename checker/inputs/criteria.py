"""test_config.json: which criteria to score and their thresholds."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from ..errors import InputError, did_you_mean
from ..metrics import EFFICIENCY_METRICS, registry
from ..metrics.base import Criterion, Metric
from ..models.base import AdkConfigModel
from ..simulation.config import UserSimulatorConfig
from .ignored import drop_ignored
from .validation import describe_validation_error, read_json, validate

DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


class CustomMetricConfig(AdkConfigModel):
    code_config: CodeConfig
    metric_info: dict[str, Any] | None = None
    description: str | None = None


class EvalConfigFile(AdkConfigModel):
    criteria: dict[str, Any] = Field(default_factory=dict)
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: UserSimulatorConfig | None = None
    live_model_config: dict[str, Any] | None = None


@dataclass(frozen=True)
class ConfiguredMetric:
    name: str
    metric: type[Metric] | None  # None for a custom metric (see custom_function_path)
    criterion: Any
    threshold: float | None
    informational: bool
    custom_function_path: str | None = None
    # An informational metric whose error is its case's error (agents-cli's judges).
    errors_gate: bool = False
    # An agents-cli custom_function's source, read before any agent runs; only ever executed
    # in the custom metric worker (checker/scoring/agents_cli_function.py).
    custom_function_source: str | None = None
    # The folder a custom metric's top-level package is imported from, for the eval file it
    # scores (inputs/metric_origin.py); None: the repository root.
    custom_function_origin: Path | None = None


@dataclass(frozen=True)
class EvalConfig:
    path: Path | None  # None when ADK's default criteria apply
    display_path: str | None
    metrics: tuple[ConfiguredMetric, ...]
    user_simulator: UserSimulatorConfig | None = None
    # Settings read but not acted on, each "file: $.path: what happens instead" (shown to users).
    warnings: tuple[str, ...] = ()

    def gating(self) -> list[ConfiguredMetric]:
        return [m for m in self.metrics if not m.informational]


def criterion_data(value: Any, display: str, path: str) -> dict[str, Any]:
    """A criterion as an object: a bare threshold becomes ``{"threshold": value}``.

    A numeric string ("0.8") is a threshold, as ADK's pydantic models read it; a boolean is
    refused (ADK would read ``true`` as 1.0: that is a mistake, not a threshold).
    """
    if isinstance(value, str):
        try:
            value = TypeAdapter(float).validate_python(value)
        except ValidationError:
            raise InputError(f"a threshold must be a number, got {json.dumps(value)[:60]}",
                             file=display, path=path) from None
    if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
        raise InputError(f"a criterion is a number (the threshold) or an object, got {type(value).__name__}",
                         file=display, path=path)
    return {"threshold": value} if isinstance(value, (int, float)) else value


def _criterion_for(name: str, metric: type[Metric], value: Any, display: str,
                   notes: list[str]) -> ConfiguredMetric:
    path = f"$.criteria.{name}"
    if metric.informational:
        if value is not None and value != {}:
            raise InputError(f"'{name}' is informational and takes no threshold", file=display,
                             path=path, fix="remove it from criteria: it is always reported")
        return ConfiguredMetric(name, metric, None, None, True)
    data = criterion_data(value, display, path)
    try:
        criterion = metric.criterion_model.model_validate(data)
    except ValidationError as exc:
        sub_path, message, fix = describe_validation_error(exc, metric.criterion_model)
        raise InputError(message, file=display, path=path + sub_path[1:], fix=fix) from None
    notes.extend(drop_ignored(criterion, display, ("criteria", name),
                              what=f"ADK ignores it ({name} does not read it)"))
    threshold = criterion.threshold  # type: ignore[attr-defined]  # a gating metric's criterion has one
    if not metric.min_value <= threshold <= metric.max_value:
        raise InputError(
            f"threshold {threshold:g} is out of range for {name} "
            f"({metric.min_value:g} to {metric.max_value:g})",
            file=display, path=path if not isinstance(value, dict) else path + ".threshold")
    return ConfiguredMetric(name, metric, criterion, threshold, False)


def build_config(raw: Any, path: Path | None, display: str | None) -> EvalConfig:
    shown = display or "default criteria"
    if not isinstance(raw, dict):
        raise InputError("expected a JSON object with 'criteria'", file=shown, path="$")
    notes: list[str] = []
    parsed = validate(EvalConfigFile, raw, shown, notes=notes)
    if not parsed.criteria:
        misspelt = next((f"'{k}' is not a key of a criteria file: {hint}" for k in raw
                         if k not in ("criteria", "customMetrics", "custom_metrics")
                         for hint in [did_you_mean(k, ["criteria"])] if hint), None)
        raise InputError("no criteria configured", file=shown, path="$.criteria",
                         fix=misspelt or _not_a_criteria_file(raw)
                         or 'add e.g. {"tool_trajectory_avg_score": 1.0}')
    known = registry()
    custom = parsed.custom_metrics or {}
    metrics: list[ConfiguredMetric] = []
    for name, value in parsed.criteria.items():
        if name in custom:
            data = criterion_data(value, shown, f"$.criteria.{name}")
            criterion = validate(_CustomCriterion, data, shown, prefix=("criteria", name),
                                 keep_extra=True)
            metrics.append(ConfiguredMetric(name, None, criterion, criterion.threshold, False,
                                            custom[name].code_config.name))
            continue
        metric = known.get(name)
        if metric is None:
            hint = did_you_mean(name, list(known) + list(custom))
            raise InputError(f"unknown metric '{name}'" + (f"; {hint}" if hint else ""),
                             file=shown, path=f"$.criteria.{name}",
                             fix="known metrics: " + ", ".join(known))
        metrics.append(_criterion_for(name, metric, value, shown, notes))
    for name in custom:
        if name not in parsed.criteria:
            raise InputError(f"custom metric '{name}' is not listed in criteria", file=shown,
                             path=f"$.custom_metrics.{name}",
                             fix=f'add "{name}": <threshold> to criteria to run it')
    for name in EFFICIENCY_METRICS:
        if name not in parsed.criteria and name in known:
            metrics.append(ConfiguredMetric(name, known[name], None, None, True))
    simulator = _share_stop_signal(metrics, parsed.user_simulator_config, shown)
    return EvalConfig(path, display, tuple(metrics), simulator, (*notes, *_unsupported(parsed, shown)))


def _not_a_criteria_file(raw: dict[str, Any]) -> str | None:
    """For a file with keys but no 'criteria' (a team's own manifest of per-flow criteria files,
    named eval_config.json beside the eval sets): that it is not one, rather than "add criteria"."""
    if not raw or "criteria" in raw:
        return None
    keys = ", ".join(sorted(raw)[:4]) + (", ..." if len(raw) > 4 else "")
    return (f"it has no 'criteria' key (its keys: {keys}); if it is not a criteria file, "
            "name the criteria file to apply with --config")


def _unsupported(parsed: EvalConfigFile, shown: str) -> tuple[str, ...]:
    """ADK settings evalcheck accepts (so ADK's own files load) but does not act on."""
    notes = []
    if parsed.live_model_config is not None:
        notes.append(f"{shown}: $.live_model_config: Live (bidi-streaming) inference is not "
                     "supported; agents get text turns and this setting has no effect")
    if parsed.user_simulator_config is not None and parsed.user_simulator_config.type == "llm_audio":
        notes.append(f"{shown}: $.user_simulator_config.type: the audio user simulator is not "
                     "supported; the simulated user talks in text, as with 'llm_backed'")
    return tuple(notes)


def _share_stop_signal(metrics: list[ConfiguredMetric], simulator: UserSimulatorConfig | None,
                       shown: str) -> UserSimulatorConfig | None:
    """One stop signal for the user simulator and every criterion with a ``stop_signal``
    (per_turn_user_simulator_quality_v1): the one given, in either place; two different
    ones are bad input. ``metrics`` is updated in place."""
    given = (simulator.stop_signal if simulator and "stop_signal" in simulator.model_fields_set
             else None)
    for configured in metrics:
        own = getattr(configured.criterion, "stop_signal", None)
        if own is None:
            continue
        if given is not None and own != given:
            raise InputError(
                f"stop_signal {own!r} differs from user_simulator_config.stop_signal {given!r}",
                file=shown, path=f"$.criteria.{configured.name}.stop_signal",
                fix="the simulated user and the metric must share one stop signal: remove "
                    "this stop_signal or give both the same value")
        given = own
    shared = given if given is not None else (simulator.stop_signal if simulator
                                              else UserSimulatorConfig().stop_signal)
    for i, configured in enumerate(metrics):
        criterion = configured.criterion
        if hasattr(criterion, "stop_signal") and criterion.stop_signal is None:
            metrics[i] = replace(configured, criterion=configured.criterion.model_copy(
                update={"stop_signal": shared}))
    if given is None or (simulator is not None and simulator.stop_signal == given):
        return simulator
    base = simulator or UserSimulatorConfig()
    return base.model_copy(update={"stop_signal": given})


class _CustomCriterion(Criterion):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


def load_config(path: Path, display: str | None = None) -> EvalConfig:
    display = display or str(path)
    return build_config(read_json(path, display), path, display)


def default_config() -> EvalConfig:
    return build_config({"criteria": dict(DEFAULT_CRITERIA)}, None, None)
