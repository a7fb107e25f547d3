"""``--inference-out``: what the agents did, in the replay format, secrets redacted (agent
output is outside text). ``evalcheck run --replay`` reads it back; a shard's file carries
what ``evalcheck merge`` needs to place its runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.records import RecordedRun, RecordedRuns
from ..safety.output import say
from ..safety.redact import Redactor
from ..version import evalcheck_version
from .writes import OutputFiles
from ..models.setkey import RunKey

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget
    from ..models.results import ShardInfo



def write_records(path: Path, records: RecordedRuns, redactor: Redactor,
                  files: OutputFiles | None = None) -> bool:
    """What the agents did, in the replay format, secrets redacted (agent output is outside
    text). Returns whether the file was written (a failure is reported by ``files``)."""
    records = redactor.model(records)
    return (files or OutputFiles()).write(path, records.model_dump_json(indent=2, exclude_none=True) + "\n",
                                          "recorded runs (inference-out)")


def write_inference_out(path: Path, targets: list[EvalTarget], runs: Mapping[RunKey, list[RecordedRun]],
                        shard: ShardInfo | None, redactor: Redactor, files: OutputFiles) -> bool:
    """Every run of ``targets``, case by case in the eval files' order, each naming its eval
    file; a shard's file with its place in the suite (``metadata.shard``)."""
    placed = [((t.key, c), r.model_copy(update={"eval_set_path": t.path}))
              for t in targets for c in t.case_ids
              for r in sorted(runs.get((t.key, c), []), key=lambda r: r.run)]
    records = RecordedRuns(runs=[r for _, r in placed])
    if shard is not None:
        from ..scale.shards import recorded_runs_shard

        # the version too: the merge refuses recorded runs of another evalcheck's run
        records.metadata = {"evalcheckVersion": evalcheck_version(), "shard": recorded_runs_shard(
            shard, targets, [key for key, _ in placed])}
    return write_records(path, records, redactor, files)


def say_interrupted(inference_out: Path | None, finished: list[RecordedRun], planned: int) -> None:
    """Ctrl-C or SIGTERM stopped the runs: what finished is written first (--inference-out),
    before anything else can go wrong, and said."""
    message = f"evalcheck: interrupted; {len(finished)} run(s) had finished"
    if inference_out and finished:
        import os

        from ..safety.redact import secret_values
        from .writes import say_error

        if write_records(inference_out, RecordedRuns(runs=finished), Redactor(secret_values(os.environ)),
                         OutputFiles(report=say_error)):
            message += f", written to {inference_out}"
    say(message + f"; scoring them (interrupted: {len(finished)} of {planned} runs)", err=True)
