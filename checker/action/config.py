"""The GitHub Action's inputs (action.yml) read into one ActionConfig: run options, what
to publish, the gate. Bad inputs are InputError (exit 2) before anything runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..compare.gate import FAIL_ON
from ..errors import InputError
from .github.job import publish_budget
from .github.labels import LabelPolicy, check_bots, check_permission
from .github.publish import PublishOptions, check_comment_key
from .github.workflow import Inputs
from ..options import RunOptions

if TYPE_CHECKING:
    from .github.baseline import BaselineSearch

COMMENT_MODES = ("update", "new", "off")
DEFAULT_RESULTS = "evalcheck-report/results.json"
DEFAULT_MARKDOWN = "evalcheck-report/report.md"

# Every input action.yml declares; tests check this list against action.yml and README.
INPUTS = (
    "paths", "agent-command", "agent-url", "agent-server-command", "app-name", "replay",
    "config", "num-runs", "concurrency", "max-concurrency", "turn-timeout", "judge-concurrency", "judge-cache",
    "template", "results", "markdown", "junit", "inference-out",
    "github-token", "setup-command", "working-directory", "comment", "comment-key",
    "check-run", "commit-status", "fail-on", "shard", "publish", "merge",
    "baseline", "baseline-depth", "verdict", "max-runs", "confirm-runs", "alpha",
    "adk-eval-history",
    "html", "prices", "max-agent-tokens", "max-judge-tokens", "max-token-increase",
    "only-changed", "agent-paths", "accept-label", "accept-label-permission", "accept-label-bots",
    "max-service-wait",
)
DEFAULT_ACCEPT_LABEL = "evalcheck:accept-regression"
ONLY_CHANGED = ("auto", "off")


@dataclass(frozen=True)
class ActionConfig:
    run: RunOptions
    publish: PublishOptions
    fail_on: str
    token: str
    setup_command: str
    workdir: Path
    results_path: Path
    markdown_path: Path
    merge: str = ""  # glob of shards' results files to merge instead of evaluating
    publish_enabled: bool = True  # false: write files, post nothing (a shard's job)
    auto_baseline: bool = True  # `baseline: auto`: the PR's merge base's results artifact
    baseline_depth: int = 5  # results of main pooled by `baseline: auto`
    only_changed: str = "off"  # `auto`: a pull request runs only the eval sets it can change
    accept_label: str = DEFAULT_ACCEPT_LABEL  # "": no label accepts regressions
    # who may accept: the least repository role of the label's author, the bots allowed
    accept_policy: LabelPolicy = field(default_factory=LabelPolicy)


def _path(inputs: Inputs, name: str, base: Path, *, must_exist: bool = False,
          default: str = "") -> Path | None:
    raw = inputs.text(name, default) or default
    if not raw:
        return None
    path = Path(raw) if Path(raw).is_absolute() else base / raw
    if must_exist and not path.exists():
        raise InputError(f"input '{name}': {raw} does not exist (paths are relative to working-directory)")
    return path


def read_config(env: Mapping[str, str], cwd: Path) -> ActionConfig:
    inputs = Inputs(env)
    workspace = Path(env.get("GITHUB_WORKSPACE") or cwd)
    workdir = _path(inputs, "working-directory", workspace) or workspace
    if not workdir.is_dir():
        raise InputError(f"input 'working-directory': {workdir} is not a directory")
    modes = [n for n in ("agent-command", "agent-url", "replay") if inputs.text(n)]
    merge = inputs.text("merge")
    if merge:
        from ..commands.merge import check_merge_inputs

        # nothing to set up, and nothing of the PR's may run before the shards are read
        check_merge_inputs([*modes, *(["setup-command"] if inputs.text("setup-command") else [])],
                           inputs.text("shard"))
    elif inputs.text("shard"):
        from ..scale.shards import parse_shard

        parse_shard(inputs.text("shard"), source="input 'shard'")  # named as the user wrote it
    if not merge and len(modes) != 1:
        raise InputError("give exactly one of the inputs agent-command, agent-url, replay"
                         + (f" (got {', '.join(modes)})" if modes else ""))
    if inputs.text("agent-server-command") and not inputs.text("agent-url"):
        raise InputError("input 'agent-server-command' goes with 'agent-url'")
    results_path = _path(inputs, "results", workdir, default=DEFAULT_RESULTS)
    markdown_path = _path(inputs, "markdown", workdir, default=DEFAULT_MARKDOWN)
    assert results_path is not None and markdown_path is not None
    run = RunOptions(
        paths=inputs.lines("paths") or ["."],
        agent_command=inputs.text("agent-command") or None,
        agent_url=inputs.text("agent-url") or None,
        agent_server_command=inputs.text("agent-server-command") or None,
        app_name=inputs.text("app-name") or None,
        replay=_path(inputs, "replay", workdir, must_exist=True),
        config_file=_path(inputs, "config", workdir, must_exist=True),
        num_runs=inputs.integer("num-runs", 2),
        concurrency=inputs.integer("concurrency", 0) or None,  # None: adapts (max-concurrency)
        max_concurrency=inputs.integer("max-concurrency", 32),
        turn_timeout=inputs.number("turn-timeout", 300.0),
        judge_concurrency=inputs.integer("judge-concurrency", 8),
        judge_cache=_path(inputs, "judge-cache", workdir),
        results=results_path,
        inference_out=_path(inputs, "inference-out", workdir),
        markdown=None,  # written here, with links to the run and files
        written_after=(("input 'markdown'", markdown_path),),
        junit=_path(inputs, "junit", workdir),
        template=_path(inputs, "template", workdir, must_exist=True),
        adk_eval_history=_path(inputs, "adk-eval-history", workdir),
        shard=inputs.text("shard") or None,
    )
    fail_on = inputs.choice("fail-on", FAIL_ON, "failure")
    baseline = inputs.text("baseline") or "auto"
    baselines: list[Path] = []
    if baseline.lower() not in ("auto", "off"):  # a results file, e.g. restored from a cache
        given = _path(inputs, "baseline", workdir, must_exist=True)
        assert given is not None  # the input is not empty here
        baselines = [given]
    from ..models.verdict_rule import parse_verdict_rule

    verdict = str(parse_verdict_rule(inputs.text("verdict") or "mean", source="input 'verdict'"))
    max_runs = inputs.integer("max-runs", 0) or None
    confirm = inputs.text("confirm-runs")
    confirm_runs = inputs.integer("confirm-runs", 0, minimum=0) if confirm else None
    alpha = _alpha(inputs.text("alpha"))
    baseline_depth = inputs.integer("baseline-depth", 5)
    # Read in this order (the first bad input is the one said), set on the run's options at once.
    run = replace(run, baselines=baselines, verdict=verdict, max_runs=max_runs, confirm_runs=confirm_runs,
                  alpha=alpha, html=_path(inputs, "html", workdir),
                  prices=_path(inputs, "prices", workdir, must_exist=True),
                  max_agent_tokens=inputs.integer("max-agent-tokens", 0) or None,
                  max_judge_tokens=inputs.integer("max-judge-tokens", 0) or None,
                  max_token_increase=_percent(inputs.text("max-token-increase")),
                  max_service_wait=inputs.number("max-service-wait", 600.0),
                  agent_paths=[line.strip() for line in inputs.text("agent-paths").splitlines() if line.strip()],
                  fail_on=fail_on)
    only_changed = inputs.choice("only-changed", ONLY_CHANGED, "off")
    publish = PublishOptions(
        budget=publish_budget(env),
        comment=inputs.choice("comment", COMMENT_MODES, "update"),
        comment_key=check_comment_key(inputs.text("comment-key") or "default"),
        check_run=inputs.flag("check-run", True),
        commit_status=inputs.flag("commit-status", False),
        template=run.template,
        fail_on=fail_on,
    )
    return ActionConfig(run=run, publish=publish, fail_on=fail_on, token=inputs.text("github-token"),
                        setup_command=inputs.text("setup-command"), workdir=workdir,
                        results_path=results_path, markdown_path=markdown_path, merge=merge,
                        publish_enabled=inputs.flag("publish", True),
                        auto_baseline=baseline.lower() == "auto", baseline_depth=baseline_depth,
                        only_changed=only_changed,
                        accept_label=_accept_label(env, inputs),
                        accept_policy=LabelPolicy(
                            permission=check_permission(inputs.text("accept-label-permission"),
                                                        "input 'accept-label-permission'"),
                            bots=check_bots(inputs.lines("accept-label-bots"), "input 'accept-label-bots'")))


def _accept_label(env: Mapping[str, str], inputs: Inputs) -> str:
    """The label that accepts regressions; an input set to "" turns it off (the runner
    passes every input declared in action.yml, so a missing one is the default)."""
    from .github.workflow import input_env_name

    if input_env_name("accept-label") not in env:
        return DEFAULT_ACCEPT_LABEL
    label = inputs.text("accept-label")
    if len(label) > 50 or any(ch in label for ch in "\n\r,"):
        raise InputError(f"input 'accept-label' {label[:60]!r} is not a label name",
                         fix="a GitHub label name (at most 50 characters, no comma), or empty for none")
    return label


def quarantine_ref(event_name: str, event: Mapping[str, object]) -> str | None:
    """The commit whose .evalcheck/quarantine.yml applies: a pull request's base commit
    itself (not its merge base with HEAD, a fork point the pull request chose; never the
    pull request's own copy); on a push to the default
    branch that branch itself (HEAD); else none (docs/quarantine.md)."""
    pull_request = event.get("pull_request")
    base = pull_request.get("base") if isinstance(pull_request, dict) else None
    sha = base.get("sha") if isinstance(base, dict) else None
    if isinstance(sha, str) and sha:
        return sha
    repository = event.get("repository")
    default = repository.get("default_branch") if isinstance(repository, dict) else None
    if event_name == "push" and isinstance(default, str) and event.get("ref") == f"refs/heads/{default}":
        return "HEAD"
    return None


def _alpha(raw: str) -> float:
    try:
        value = float(raw) if raw else 0.05
    except ValueError:
        value = float("nan")
    if not 0 < value <= 0.5:
        raise InputError(f"input 'alpha' must be a number above 0 and at most 0.5, got {raw!r}",
                         fix="the family-wise significance level of the regression gate, e.g. 0.05")
    return value


def _percent(raw: str) -> float | None:
    if not raw:
        return None
    try:
        value = float(raw.strip().rstrip("%"))
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise InputError(f"input 'max-token-increase' must be a percentage of 0 or more, got {raw!r}",
                         fix="e.g. 50: fail when a case's agent tokens per run grew by more than 50%")
    return value


def changed_since(config: ActionConfig, pull_request: Mapping[str, object], event: str,
                  baseline_commit: str | None) -> str | None:
    """``only-changed: auto``: the commit a pull request's changes are read from - that of the
    main results carried (the automatic baseline's), else the base commit of the event - and
    None, said, when everything runs (a push, ``only-changed: off``, a shard: docs/changed-files.md)."""
    from ..safety.output import say

    if config.only_changed != "auto":
        return None
    sha = pull_request_base(pull_request)
    if sha is None:
        say(f"evalcheck: only-changed: auto: not a pull request ({event or 'no event'}): every eval set runs")
        return None
    return baseline_commit or sha


def pull_request_base(pull_request: Mapping[str, object]) -> str | None:
    """The base commit of the event's pull request (``pull_request.base.sha``); None on a
    push or any event without one."""
    base = pull_request.get("base")
    sha = base.get("sha") if isinstance(base, dict) else None
    return sha if isinstance(sha, str) and sha else None


def with_found_baselines(run: RunOptions, search: BaselineSearch | None) -> RunOptions:
    """``run`` comparing with the results of main the search found (newest first: pooled per
    case, docs/comparing.md); as given when it found none."""
    if search is None or not search.history:
        return run
    return replace(run, baselines=[found.path for found in search.history], baselines_found=True)
