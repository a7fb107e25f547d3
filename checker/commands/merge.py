"""``evalcheck merge`` and the Action's ``merge`` input: read the shards' files, merge them
(scale/merge.py), price, compare and write the reports as ``evalcheck run`` does.

Token budgets (--max-agent-tokens, --max-judge-tokens) are per shard: each shard spends and
stops on its own. The merge carries the budgets the shards spent (each named with its shard)
and, like the shard, ends with exit 2 naming them (docs/sharding.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from ..errors import InputError
from ..inputs.bulk import paused_gc
from ..compare.overrides import AcceptLabel, apply_overrides, say_overrides
from ..models.results import ConfirmationFamily, Results
from ..scale.merge import MergeInputs, merge_recorded_runs, merge_results, read_merge_inputs, shard_of, shards_family


@dataclass
class MergeRequest:
    files: list[Path]
    results: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    template: Path | None = None
    inference_out: Path | None = None
    html: Path | None = None
    prices: Path | None = None
    baselines: list[Path] = field(default_factory=list)  # newest first
    fail_on: str = "failure"
    alpha: float = 0.05
    max_token_increase: float | None = None
    quarantine_ref: str | None = None  # .evalcheck/quarantine.yml of the commit it names
    # --accept-label as the pull request's timeline shows it; the Action's merge job: a
    # quarantine that may not apply (a base commit missing from the checkout).
    accept: AcceptLabel | None = None
    quarantine_auto: bool = False
    # The Action's merge job on a pull request: its base (a baseline file of the repository
    # that the pull request changed is read as the base commit has it: inputs/pr_files.py).
    base: str | None = None


def _shard_budgets(inputs: MergeInputs) -> list[dict[str, Any]] | None:
    """The budgets each shard spent, named with their shard."""
    spent = [{**budget, "shard": f"{r.shard.index}/{r.shard.count}"}
             for _, r in inputs.results if r.shard is not None for budget in r.budgets or []]
    return spent or None


def _recorded(document: dict[str, Any]) -> dict[tuple[str, str], list[Any]]:
    """The merged recorded runs by case, for the HTML report's turns."""
    from ..models.records import RecordedRuns

    runs: dict[tuple[str, str], list[Any]] = {}
    for run in RecordedRuns.model_validate(document).runs:
        runs.setdefault((run.key, run.eval_id), []).append(run)
    return runs


@paused_gc()  # bulk JSON in, bulk JSON out (bulk.py)
def merge_files(request: MergeRequest) -> Results:
    """Read, check and merge; price the merged usage (--prices over the default table, as
    ``run`` does); compare with ``request.baselines`` (the comparison and its intervals use
    the pooled runs of all shards; the token gate and the trend of main as ``run``); write
    the merged files. Raises InputError."""
    from .compare import command_overrides, compare_run
    from ..report.cost import apply_prices, default_table, read_prices
    from ..report.finish import ReportOptions, write_reports
    from ..report.writes import OutputFiles, check_outputs

    check_outputs([("--results", request.results), ("--markdown", request.markdown),
                   ("--junit", request.junit), ("--inference-out", request.inference_out),
                   ("--html", request.html)],
                  [*(("one of the files to merge", f) for f in request.files),
                   ("the template (--template)", request.template), ("--prices", request.prices)])
    if request.template is not None:  # a broken template is said before the work
        from ..report.markdown import check_template

        check_template(request.template)
    prices = read_prices(request.prices) if request.prices is not None else default_table()
    files = OutputFiles()
    overrides = command_overrides(request.quarantine_ref or request.base, request.accept,  # git, first
                                  auto=request.quarantine_auto or request.quarantine_ref is None)

    inputs = read_merge_inputs(request.files)
    merged = merge_results([p for p, _ in inputs.results], [r for _, r in inputs.results])
    recorded = None
    if request.inference_out is not None:
        if not inputs.recorded:
            raise InputError("--inference-out needs the shards' recorded-runs files",
                             fix="pass the files the shards wrote with --inference-out too")
        first_path, first = inputs.results[0]
        recorded = merge_recorded_runs([p for p, _ in inputs.recorded], [d for _, d in inputs.recorded],
                                       results=shard_of(first_path, first.shard, first.metadata))
        # pydantic-core's serializer: json.dumps with an indent is the pure-Python encoder
        files.write(request.inference_out, to_json(recorded, indent=2).decode("utf-8") + "\n",
                    "recorded runs file")
    elif inputs.recorded:
        raise InputError("recorded-runs files given but no --inference-out to merge them into",
                         file=", ".join(str(p) for p, _ in inputs.recorded))
    merged.budgets = _shard_budgets(inputs)
    if merged.budgets:
        merged.passed = False  # as the shard that spent it: never a pass
    apply_prices(merged, prices)  # each shard's summary cost is gone with its summary
    claims = [c for c in merged.pull_request_files or [] if c.kind != "baseline"]  # the shards' replay
    family = shards_family(inputs.results)
    baselines: list[Results] = []
    paths = list(request.baselines)
    if request.baselines:
        from ..compare.results_file import BaselineOptions, read_baselines
        from ..inputs.discover import find_repo_root

        read = read_baselines(BaselineOptions(tuple(request.baselines), request.base), find_repo_root(Path.cwd()))
        baselines, paths = read.files, read.paths
        claims += read.claims
    if family is not None:  # the shards' fresh runs decide, once, for the whole suite
        merged = _decide_confirmed(merged, family, baselines, paths, request, inputs)
    elif baselines:
        merged = compare_run(paths, merged, baselines, alpha=request.alpha,
                             max_token_increase=request.max_token_increase)
        if merged.comparison is not None and merged.metadata.get("mode") != "replay":
            merged.comparison.notes.append(
                "the shards ran no confirmation runs (they had no baseline): decided on the runs "
                "recorded; give every shard the same --baseline (the Action's shard jobs: "
                "baseline: auto with `actions: read`) to decide on fresh runs as an unsharded run does")
    if claims or merged.pull_request_files:
        from ..compare.baseline_change import record_claims

        merged = record_claims(merged, claims)
    say_overrides(apply_overrides(merged, overrides))
    write_reports(merged, ReportOptions(results=request.results, markdown=request.markdown,
                                        junit=request.junit, template=request.template,
                                        html=request.html, fail_on=request.fail_on), files,
                  runs=_recorded(recorded) if recorded is not None and request.html else None)
    files.check()
    return merged


def _decide_confirmed(merged: Results, family: ConfirmationFamily, baselines: list[Results],
                      paths: list[Path], request: MergeRequest, inputs: MergeInputs) -> Results:
    """The comparison of the merged suite decided on the shards' fresh runs: the family is
    every shard's screened tests together, as one unsharded run's (docs/sharding.md). Only
    against the baseline files and alpha the shards screened and stopped with."""
    from .compare import compare_run
    from ..compare.recorded import check_family, check_screened, recorded_confirmation, recorded_keys
    from ..inputs.discover import report_path

    where = str(inputs.results[0][0])
    check_family(family, baselines, [report_path(p) for p in paths], request.alpha, where, "the shards")
    keys = recorded_keys(merged, baselines)
    recorded = recorded_confirmation(merged, keys)
    compared = compare_run(paths, merged, baselines, alpha=request.alpha,
                           confirmations=recorded.confirmations, contested_runs=recorded.contested,
                           max_token_increase=request.max_token_increase)
    check_screened(compared, recorded, keys, ", ".join(str(p) for p, _ in inputs.results))
    return compared


def check_merge_inputs(modes: Sequence[str], shard: str) -> None:
    """The Action's ``merge`` input replaces evaluating: no agent, no shard with it."""
    if modes:
        raise InputError(f"input 'merge' merges the shards' results: give no {', '.join(modes)} with it",
                         fix="evaluate in the shard jobs, merge in a final job")
    if shard:
        raise InputError("inputs 'merge' and 'shard' go to different jobs",
                         fix="shard jobs: shard + publish: false; the final job: merge")


def find_merge_files(pattern: str, workdir: Path) -> list[Path]:
    """The files the ``merge`` glob (relative to working-directory, ``**`` allowed) names."""
    import glob

    found = sorted({Path(p) for p in glob.glob(pattern, root_dir=workdir, recursive=True)
                    if (workdir / p).is_file()})
    if not found:
        raise InputError(f"input 'merge': no file matches {pattern!r} in {workdir}",
                         fix="download the shards' artifacts first (actions/download-artifact)")
    return found


def merge_in_action(pattern: str, run: Any, fail_on: str) -> Results:
    """The Action's final job: merge what the glob finds, write the run's files, print the
    gates' lines. ``run`` is the job's RunOptions (results, junit, inference-out, html,
    template, prices, baseline, max-token-increase)."""
    from ..report.finish import report_gate, say_run_lines
    from ..report.text import log_safe

    files = find_merge_files(pattern, Path.cwd())
    print(f"evalcheck: merging {len(files)} file(s): " + ", ".join(log_safe(str(f)) for f in files))
    merged = merge_files(MergeRequest(files=files, results=run.results, junit=run.junit,
                                      template=run.template, inference_out=run.inference_out,
                                      html=run.html, prices=run.prices,
                                      baselines=list(run.baselines), fail_on=fail_on,
                                      alpha=run.alpha, max_token_increase=run.max_token_increase,
                                      quarantine_ref=run.quarantine_ref, accept=run.accept,
                                      quarantine_auto=run.quarantine_auto, base=run.base))
    from ..compare.confirm import confirmation_line

    say_run_lines(merged, filter(None, [confirmation_line(merged.metadata)]))  # the shards' fresh runs
    report_gate(merged, fail_on)
    return merged
