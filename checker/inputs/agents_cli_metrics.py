"""agents-cli's predefined metrics (names in ``metrics_to_run``) and its ``custom_function``
metrics, as evalcheck metrics; docs/agents-cli.md#predefined-metrics has the table.

agents-cli hands a name that is not a ``custom_metrics`` entry to the Vertex AI SDK
(``client.evals.evaluate``), which resolves it to a predefined metric of the Gen AI eval
service (google-cloud-aiplatform 2.7 ``_evals_constant.SUPPORTED_PREDEFINED_METRICS``,
a bare name to the version its ``RubricMetric`` loader pins) or to a computation metric
(``exact_match``, ``bleu``, ``rouge_*``). A name is mapped here only onto an evalcheck metric
that asks the same question of the same inputs on the same scale; the others are refused
(exit 2) with what to write instead.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import InputError
from ..metrics import get_metric
from ..safety.confine import confined
from .criteria import ConfiguredMetric

FIX = ("write it as a custom_metrics entry with a prompt_template (an LLM judge) or a "
       "custom_function, or remove it from metrics_to_run; docs/agents-cli.md#predefined-metrics")

# agents-cli name -> (evalcheck metric, on the final turn only). agents-cli (the SDK) scores a
# case's one final response; the multi-turn metrics score the whole conversation.
MAPPED: dict[str, tuple[str, bool]] = {
    **dict.fromkeys(("safety", "safety_v1"), ("safety_v1", True)),
    **dict.fromkeys(("multi_turn_task_success", "multi_turn_task_success_v1"),
                    ("multi_turn_task_success_v1", False)),
    **dict.fromkeys(("multi_turn_trajectory_quality", "multi_turn_trajectory_quality_v1"),
                    ("multi_turn_trajectory_quality_v1", False)),
    **dict.fromkeys(("multi_turn_tool_use_quality", "multi_turn_tool_use_quality_v1"),
                    ("multi_turn_tool_use_quality_v1", False)),
    **dict.fromkeys(("final_response_match", "final_response_match_v2"), ("final_response_match_v2", True)),
    **dict.fromkeys(("hallucination", "hallucination_v1"), ("hallucinations_v1", True)),
    "rouge_1": ("response_match_score", True),
}
NEEDS_REFERENCE = {"final_response_match_v2", "response_match_score"}

# agents-cli's other built-in names, each with what it computes: no evalcheck metric does.
_ADAPTIVE = "Vertex AI's eval service with rubrics it generates for each case"
REFUSED: dict[str, str] = {
    "general_quality": f"overall quality of the response ({_ADAPTIVE})",
    "text_quality": f"fluency, coherence and grammar of the response ({_ADAPTIVE})",
    "instruction_following": f"how well the response follows the prompt's instructions ({_ADAPTIVE})",
    "grounding": "whether each claim of the response is supported by the case's context (Vertex AI)",
    "multi_turn_general_quality": f"overall quality of a conversation ({_ADAPTIVE})",
    "multi_turn_text_quality": f"text quality of a conversation ({_ADAPTIVE})",
    "final_response_quality": f"quality of the agent's final response ({_ADAPTIVE}, or the "
                              "case's rubric_groups); evalcheck's rubric_based_final_response_"
                              "quality_v1 needs rubrics you write",
    "final_response_reference_free": f"quality of the final response without a reference ({_ADAPTIVE})",
    "tool_use_quality": f"the tool calls of a turn ({_ADAPTIVE}); evalcheck's rubric_based_tool_"
                        "use_quality_v1 needs rubrics you write",
    "gecko_text2image": "quality of a generated image (Vertex AI's Gecko)",
    "gecko_text2video": "quality of a generated video (Vertex AI's Gecko)",
    "exact_match": "exact string match of response and reference (Vertex AI)",
    "bleu": "BLEU of the response against the reference (Vertex AI)",
}
_VERSIONS = {"general_quality": (1, 2), "text_quality": (1, 2), "instruction_following": (1, 2),
             "grounding": (1, 2), "multi_turn_general_quality": (1, 2), "multi_turn_text_quality": (1, 2),
             "final_response_quality": (1, 2), "final_response_reference_free": (1, 2),
             "tool_use_quality": (1, 2), "gecko_text2image": (1, 2), "gecko_text2video": (1, 2),
             "safety": (1, 3), "hallucination": (1, 2), "final_response_match": (2, 3),
             "multi_turn_task_success": (1,), "multi_turn_trajectory_quality": (1,),
             "multi_turn_tool_use_quality": (1,)}
SPEC_NAMES = frozenset(f"{base}_v{v}" for base, versions in _VERSIONS.items() for v in versions)
BODY_KEYS = ("prompt_template", "custom_function", "custom_function_file", "remote_custom_function")


def is_builtin(name: str) -> bool:
    """A name agents-cli resolves to a built-in metric (mapped here or not)."""
    lowered = name.lower()
    base = re.sub(r"_v\d+$", "", lowered)
    return (lowered in MAPPED or lowered in SPEC_NAMES or base in _VERSIONS or lowered in REFUSED
            or lowered.startswith("rouge"))


def newest_version(name: str) -> str:
    """What agents-cli makes of a ``custom_metrics`` entry that only names a built-in
    (``_resolve_predefined_metric_name``): a bare name becomes its newest version
    (``safety`` -> ``safety_v3``), unlike the same name in ``metrics_to_run``, which the SDK
    resolves to the version it pins."""
    lowered = name.lower()
    versions = _VERSIONS.get(lowered)
    return f"{lowered}_v{max(versions)}" if versions else lowered


def builtin_metric(name: str, threshold: float | None, display: str, where: str) -> ConfiguredMetric:
    """The evalcheck metric of agents-cli's built-in ``name``, or exit 2 saying why not."""
    lowered = name.lower()
    if lowered not in MAPPED:
        base = re.sub(r"_v\d+$", "", lowered)
        mapped = sorted(n for n in MAPPED if n.startswith(base + "_v"))
        if base in REFUSED:
            why = f"agents-cli's built-in metric '{name}' ({REFUSED[base]}) has no evalcheck equivalent"
        elif mapped:
            why = (f"agents-cli's built-in metric '{name}' is a version evalcheck has no metric for "
                   f"(it maps {', '.join(mapped)})")
        elif lowered.startswith("rouge"):
            why = (f"agents-cli's built-in metric '{name}' (a ROUGE variant computed by Vertex AI) has "
                   "no evalcheck equivalent; evalcheck maps rouge_1 only")
        else:
            why = f"agents-cli's built-in metric '{name}' has no evalcheck equivalent"
        raise InputError(why, file=display, path=where, fix=FIX)
    target, final_turn = MAPPED[lowered]
    metric = get_metric(target)
    assert metric is not None, target
    if threshold is not None and not metric.min_value <= threshold <= metric.max_value:
        raise InputError(f"--threshold {name}={threshold:g} is outside the range of its scores "
                         f"({metric.min_value:g} to {metric.max_value:g}: evalcheck's {target})",
                         file=display, path=where)
    data: dict[str, Any] = {"threshold": 0.0 if threshold is None else threshold}
    if target == "safety_v1":
        data["backend"] = "vertex"  # agents-cli's safety runs on Vertex AI's eval service
    criterion = metric.criterion_model.model_validate(data)
    if final_turn:
        from ..metrics.machinery.agents_cli_mapped import final_turn_metric

        metric = final_turn_metric(metric)  # type: ignore[arg-type]  # a class is hashable; mypy's Hashable check says not
    return ConfiguredMetric(name=name, metric=metric, criterion=criterion, threshold=threshold,
                            informational=threshold is None, errors_gate=True)


def needs_reference(configured: ConfiguredMetric) -> bool:
    return getattr(configured.metric, "name", "") in NEEDS_REFERENCE


class FunctionCriterion(BaseModel):
    """A custom_function metric: its threshold (None: informational) and its source's hash
    (so that editing the function changes the cases' fingerprints)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = None
    source_sha256: str


def function_metric(name: str, entry: dict[str, Any], threshold: float | None, config: Path,
                    display: str, where: str, confine: Path | None) -> ConfiguredMetric:
    """A ``custom_function`` / ``custom_function_file`` entry, run by the custom metric worker
    as agents-cli runs it locally: ``evaluate(instance)``. Its source is read now, before any
    of the pull request's code runs, and only ever executed in the worker."""
    if "remote_custom_function" in entry or entry.get("execution", "local") == "remote":
        key = "remote_custom_function" if "remote_custom_function" in entry else "execution"
        raise InputError(f"metric '{name}' runs in Vertex AI's code execution sandbox; evalcheck "
                         "runs custom functions locally, in its custom metric worker",
                         file=display, path=f"{where}.{key}",
                         fix="give it a custom_function without execution: remote")
    if entry.get("execution", "local") != "local":
        raise InputError(f"metric '{name}': execution must be 'local' or 'remote', got "
                         f"{entry['execution']!r}", file=display, path=f"{where}.execution")
    if "custom_function" in entry and "custom_function_file" in entry:
        raise InputError(f"metric '{name}' gives both custom_function and custom_function_file",
                         file=display, path=f"{where}.custom_function_file", fix="keep one of them")
    key = "custom_function" if "custom_function" in entry else "custom_function_file"
    source = entry[key]
    if not isinstance(source, str) or not source.strip():
        raise InputError(f"{key} must be a non-empty string", file=display, path=f"{where}.{key}")
    if key == "custom_function_file":
        source = _read_function_file(source, config, display, f"{where}.{key}", confine)
    _check_source(source, name, display, f"{where}.{key}")
    criterion = FunctionCriterion(threshold=threshold,
                                  source_sha256=hashlib.sha256(source.encode("utf-8")).hexdigest())
    return ConfiguredMetric(name=name, metric=None, criterion=criterion, threshold=threshold,
                            informational=threshold is None, errors_gate=True,
                            custom_function_source=source)


def _read_function_file(ref: str, config: Path, display: str, where: str, confine: Path | None) -> str:
    path = Path(ref) if Path(ref).is_absolute() else config.parent / ref
    try:  # first: whether a file outside the workspace exists is not the PR's to learn
        confined(path, confine, "this custom_function_file", named_in=display)
    except InputError as exc:
        raise InputError(exc.message, file=display, path=where, fix=exc.fix) from None
    if not path.is_file():
        raise InputError(f"custom_function_file not found: {ref} (resolved to {path}, relative to "
                         "the eval config's folder)", file=display, path=where)
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read custom_function_file {ref}: {exc}", file=display, path=where) from None


def _check_source(source: str, name: str, display: str, where: str) -> None:
    """Parsed, never run, here: a syntax error or no top-level ``evaluate`` is bad input."""
    try:
        tree = ast.parse(source, filename=f"<custom_metric:{name}>")
    except SyntaxError as exc:
        raise InputError(f"metric '{name}': the custom_function is not valid Python (line "
                         f"{exc.lineno}: {exc.msg})", file=display, path=where) from None
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound.update(t.id for t in targets if isinstance(t, ast.Name))
    if "evaluate" not in bound:
        raise InputError(f"metric '{name}': the custom_function defines no evaluate(instance), "
                         "which agents-cli calls", file=display, path=where,
                         fix="def evaluate(instance): return {'score': ...}")
