"""agents-cli (google/agents-cli) datasets: an ``EvaluationDataset`` JSON file with its
``eval_config.yaml``, read as an EvalSet and an EvalConfig.

Discovery rule: a ``*.json`` file in a folder named ``datasets`` whose parent folder holds
``eval_config.yaml`` (or ``.yml``) - agents-cli's ``tests/eval/datasets/*.json`` beside
``tests/eval/eval_config.yaml``. Each case's ``prompt`` (or the user turns of its
``agent_data``) are the turns the agent is run on; ``metrics_to_run`` names the metrics: a
``custom_metrics`` entry with a ``prompt_template`` (a Gemini judge) or a ``custom_function``
(the custom metric worker), or a built-in name mapped onto an evalcheck metric
(agents_cli_metrics.py). agents-cli has no thresholds: ``--threshold NAME=VALUE`` gives one;
without it the metric is informational.
docs/agents-cli.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models.evalset import Content, EvalCase, EvalSet, Invocation, text_content
from .criteria import ConfiguredMetric, EvalConfig
from .validation import read_json, validate

CONFIG_NAMES = ("eval_config.yaml", "eval_config.yml")
DATASETS_FOLDER = "datasets"
CONFIG_FIX = "see docs/agents-cli.md for what evalcheck reads of eval_config.yaml"


def dataset_config(path: Path) -> Path | None:
    """The eval_config.yaml of an agents-cli dataset file, None when ``path`` is not one."""
    if path.suffix != ".json" or path.parent.name != DATASETS_FOLDER:
        return None
    return next((path.parent.parent / n for n in CONFIG_NAMES
                 if (path.parent.parent / n).is_file()), None)


def load_dataset(path: Path, display: str) -> tuple[EvalSet, dict[str, int]]:
    """The dataset as an EvalSet (its id: the file's name without ``.json``), with the line
    of each case's id."""
    data = read_json(path, display)
    if not isinstance(data, dict) or not isinstance(data.get("eval_cases"), list):
        raise InputError("not an agents-cli EvaluationDataset: it needs an \"eval_cases\" list",
                         file=display, path="$", fix='{"eval_cases": [{"eval_case_id": ..., "prompt": ...}]}')
    cases, seen = [], set()
    for i, raw in enumerate(data["eval_cases"]):
        where = f"$.eval_cases[{i}]"
        if not isinstance(raw, dict):
            raise InputError("an eval case is an object", file=display, path=where)
        case_id = raw.get("eval_case_id", f"case_{i + 1}")
        if not isinstance(case_id, str) or not case_id.strip():
            raise InputError("eval_case_id must be a non-empty string", file=display,
                             path=f"{where}.eval_case_id")
        if case_id in seen:
            raise InputError(f"eval_case_id '{case_id}' is used twice", file=display,
                             path=f"{where}.eval_case_id", fix="give each case its own id")
        seen.add(case_id)
        turns = _user_turns(raw, display, where)
        reference = _text(raw.get("reference"), display, f"{where}.reference")
        conversation = [Invocation(invocation_id=f"turn-{n + 1}", user_content=turn,
                                   final_response=text_content(reference, "model")
                                   if reference and n == len(turns) - 1 else None)
                        for n, turn in enumerate(turns)]
        case = EvalCase(eval_id=case_id, conversation=conversation)
        case.keep_agents_cli_case(raw)
        cases.append(case)
    text = path.read_text(encoding="utf-8-sig")
    from .evalfile import find_case_lines

    return (EvalSet(eval_set_id=path.stem, eval_cases=cases),
            find_case_lines(text, ("eval_case_id",), [c.eval_id for c in cases]))


def _user_turns(raw: dict[str, Any], display: str, where: str) -> list[Content]:
    if raw.get("prompt") is not None:
        prompt = raw["prompt"]
        if isinstance(prompt, str):
            return [text_content(prompt, "user")]
        return [validate(Content, prompt, display, (*_path(where), "prompt"))]
    agent = raw.get("agent_data")
    if isinstance(agent, dict) and isinstance(agent.get("turns"), list):
        turns = []
        for t, turn in enumerate(agent["turns"]):
            for e, event in enumerate(turn.get("events") or [] if isinstance(turn, dict) else []):
                if isinstance(event, dict) and (event.get("author") == "user" or (
                        isinstance(event.get("content"), dict) and event["content"].get("role") == "user"
                        and event.get("author") in (None, "user"))):
                    turns.append(validate(Content, event.get("content"), display,
                                          (*_path(where), "agent_data", "turns", t, "events", e, "content")))
        if turns:
            return turns
        raise InputError("agent_data has no user event to run the agent on", file=display,
                         path=f"{where}.agent_data.turns", fix='give a turn an event with "author": "user"')
    raise InputError("the case has neither a prompt nor agent_data turns: nothing to run the agent on",
                     file=display, path=where, fix='add "prompt": {"role": "user", "parts": [{"text": ...}]}')


def _path(where: str) -> tuple[Any, ...]:
    return ("eval_cases", int(where.split("[")[1].rstrip("]")))


def _text(value: Any, display: str, where: str) -> str:
    """A reference or context as text: a string, a Content, or ``{"response": Content}``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("response"), dict):
        value = value["response"]
    from ..models.evalset import content_text

    return content_text(validate(Content, value, display))


def load_agents_cli_config(path: Path, display: str, thresholds: dict[str, float],
                           confine: Path | None = None) -> EvalConfig:
    """``metrics_to_run`` of an eval_config.yaml: its ``custom_metrics`` entries (a Gemini judge
    of a ``prompt_template``, or a ``custom_function``) and the built-in metrics evalcheck maps
    (checker/inputs/agents_cli_metrics.py); a metric without ``--threshold`` is informational
    (a warning says so)."""
    try:
        import yaml
    except ImportError:
        raise InputError("reading eval_config.yaml needs PyYAML", file=display,
                         fix="pip install pyyaml (or evalcheck-adk[judges])") from None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=display) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {' '.join(str(exc).split())}", file=display) from None
    if not isinstance(data, dict):
        raise InputError("eval_config.yaml is a mapping with metrics_to_run and custom_metrics",
                         file=display, path="$", fix=CONFIG_FIX)
    names = data.get("metrics_to_run") or []
    customs = data.get("custom_metrics") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError("metrics_to_run must be a list of metric names", file=display,
                         path="$.metrics_to_run")
    if not isinstance(customs, list):
        raise InputError("custom_metrics must be a list of metric objects", file=display,
                         path="$.custom_metrics")
    pool: dict[Any, tuple[int, Any]] = {}
    for i, entry in enumerate(customs):
        if not isinstance(entry, dict):
            raise InputError("a custom_metrics entry is a mapping with a name and a prompt_template "
                             "or custom_function", file=display, path=f"$.custom_metrics[{i}]",
                             fix=CONFIG_FIX)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputError("a custom_metrics entry needs a name (a non-empty string)", file=display,
                             path=f"$.custom_metrics[{i}].name", fix="name the metric, e.g. name: my_metric")
        if name in pool:
            raise InputError(f"two custom_metrics entries are named '{name}' (entries "
                             f"{pool[name][0]} and {i})", file=display, path=f"$.custom_metrics[{i}].name",
                             fix="give each metric its own name, or remove one")
        pool[name] = (i, entry)
    if not names:
        names = list(pool)
    if not names:
        raise InputError("no metrics: metrics_to_run is empty and there are no custom_metrics",
                         file=display, path="$.metrics_to_run", fix=CONFIG_FIX)
    metrics, warnings = [], []
    for n, name in enumerate(names):
        metric = _metric(name, pool, thresholds.get(name), path, display, f"$.metrics_to_run[{n}]", confine)
        if metric.threshold is None:
            warnings.append(f"{display}: metric '{name}' has no threshold (agents-cli has none): "
                            f"informational, it gates nothing; give --threshold {name}=VALUE to gate on it")
        metrics.append(metric)
    return EvalConfig(path=path, display_path=display, metrics=tuple(metrics), warnings=tuple(warnings))


def _metric(name: str, pool: dict[Any, tuple[int, Any]], threshold: float | None, path: Path,
            display: str, where: str, confine: Path | None) -> ConfiguredMetric:
    from .agents_cli_metrics import (BODY_KEYS, MAPPED, SPEC_NAMES, builtin_metric, function_metric,
                                     is_builtin, newest_version)

    if name not in pool:
        if is_builtin(name):
            return builtin_metric(name, threshold, display, where)
        raise InputError(f"metric '{name}' is neither a custom_metrics entry nor one of "
                         "agents-cli's built-in metrics", file=display, path=where,
                         fix="define it under custom_metrics with a prompt_template or a "
                             "custom_function, or remove it")
    i, entry = pool[name]
    where = f"$.custom_metrics[{i}]"
    if "rubric_group_name" in entry:  # agents-cli refuses it too
        raise InputError(f"metric '{name}': rubric_group_name is not supported (nor by agents-cli)",
                         file=display, path=f"{where}.rubric_group_name",
                         fix="drop rubric_group_name to judge with your own prompt_template")
    has_body = any(k in entry for k in BODY_KEYS)
    if has_body and name.lower() in SPEC_NAMES:
        raise InputError(f"metric '{name}': that name is reserved by Vertex AI's eval service, "
                         "which would ignore this definition in agents-cli", file=display,
                         path=f"{where}.name", fix=f"rename the metric (e.g. 'my_{name}')")
    if not has_body:
        if is_builtin(name) and set(entry) == {"name"} and newest_version(name) not in MAPPED:
            raise InputError(f"metric '{name}': agents-cli resolves a custom_metrics entry that only "
                             f"names a built-in metric to its newest version, {newest_version(name)}, "
                             "which evalcheck has no metric for", file=display, path=where,
                             fix=f"remove the entry: '{name}' in metrics_to_run alone is the version "
                                 "evalcheck maps (docs/agents-cli.md#predefined-metrics)")
        if is_builtin(name) and (set(entry) == {"name"} or name.lower() not in MAPPED):
            return builtin_metric(name, threshold, display, where)  # refused unless mapped
        if is_builtin(name):
            raise InputError(f"metric '{name}': this entry sets parameters of agents-cli's built-in "
                             f"metric ({', '.join(sorted(k for k in entry if k != 'name'))}), which "
                             "evalcheck does not apply", file=display, path=where,
                             fix="remove the entry (the name in metrics_to_run is enough), or give "
                                 "it a prompt_template")
        raise InputError(f"metric '{name}' needs a prompt_template or a custom_function",
                         file=display, path=where,
                         fix="give it a prompt_template (an LLM judge) or a custom_function, or "
                             "remove it from metrics_to_run")
    if "prompt_template" not in entry:
        return function_metric(name, entry, threshold, path, display, where, confine)
    template = entry.get("prompt_template")
    if not isinstance(template, str) or not template.strip():
        raise InputError(f"metric '{name}': prompt_template must be a non-empty string",
                         file=display, path=f"{where}.prompt_template")
    _check_placeholders(template, display, f"{where}.prompt_template")
    options: dict[str, Any] = {"num_samples": 1}
    if isinstance(entry.get("judge_model"), str):
        options["judge_model"] = entry["judge_model"]
    from ..metrics.base import JudgeModelOptions
    from ..metrics.machinery.agents_cli_judge import AgentsCliJudge, AgentsCliJudgeCriterion

    criterion = AgentsCliJudgeCriterion(threshold=threshold, prompt_template=template,
                                        judge_model_options=JudgeModelOptions.model_validate(options))
    return ConfiguredMetric(name=name, metric=AgentsCliJudge, criterion=criterion,
                            threshold=threshold, informational=threshold is None, errors_gate=True)


def check_references(eval_set: EvalSet, config: EvalConfig, display: str,
                     lines: dict[str, int]) -> None:
    """A metric comparing with the reference on a case without one is bad input (agents-cli
    errors on each such case)."""
    from .agents_cli_metrics import needs_reference

    needing = [m.name for m in config.metrics if needs_reference(m)]
    if not needing:
        return
    for i, case in enumerate(eval_set.eval_cases):
        last = case.conversation[-1] if case.conversation else None
        if last is None or last.final_response is None:
            raise InputError(f"case '{case.eval_id}' has no reference, which metric "
                             f"'{needing[0]}' compares the agent's final response with",
                             file=display, path=f"$.eval_cases[{i}]", line=lines.get(case.eval_id),
                             fix='add "reference": {"response": {"role": "model", "parts": '
                                 '[{"text": ...}]}}, or remove the metric from metrics_to_run')


def _check_placeholders(template: str, display: str, where: str) -> None:
    from ..metrics.machinery.agents_cli_judge import PLACEHOLDER, VARIABLES

    unknown = sorted({m.group(1) for m in PLACEHOLDER.finditer(template)} - set(VARIABLES))
    if unknown:
        raise InputError(f"the prompt_template uses {{{unknown[0]}}}, which evalcheck cannot fill",
                         file=display, path=where,
                         fix="use " + ", ".join("{" + v + "}" for v in VARIABLES))
