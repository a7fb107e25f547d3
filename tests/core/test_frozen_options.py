"""No stage writes into an options object (issue 42 point 2): RunOptions, the options each stage
takes (built from it by checker/commands/stage_options.py) and the Action's are frozen; what a
stage decides comes back in its output."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from checker.action.config import ActionConfig
from checker.action.github.publish import PublishOptions
from checker.agents.schedule import AgentOptions
from checker.agents.scheduler import ScheduleOptions
from checker.commands.stage_options import StageOptions, report_options
from checker.compare.adaptive import AdaptiveOptions
from checker.compare.results_file import BaselineOptions
from checker.options import RunOptions
from checker.report.finish import ReportOptions
from checker.scale.changed import ChangedOptions
from checker.scale.shards import ShardOptions
from checker.scoring.metadata import MetadataOptions
from checker.scoring.services import ScoringOptions

CHECKER = Path(__file__).resolve().parents[2] / "checker"

# Every options dataclass of checker/: the run's, the stages', the bundle of them, the Action's.
OPTIONS = (RunOptions, StageOptions, AgentOptions, ScheduleOptions, AdaptiveOptions, BaselineOptions,
           ScoringOptions, MetadataOptions, ChangedOptions, ShardOptions, ReportOptions, PublishOptions)


def _options_dataclasses(root: Path = CHECKER) -> dict[str, bool]:
    """Every dataclass under ``root`` named ``...Options``, read from the source -> whether its
    decorator says frozen=True."""
    found = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or not node.name.endswith("Options"):
                continue
            for decorator in node.decorator_list:
                name = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(name, ast.Name) and name.id == "dataclass":
                    found[node.name] = isinstance(decorator, ast.Call) and any(
                        k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
                        for k in decorator.keywords)
    return found


def test_every_options_dataclass_is_frozen_and_listed_here():
    found = _options_dataclasses()
    assert {name for name, frozen in found.items() if not frozen} == set()
    assert set(found) == {cls.__name__ for cls in OPTIONS}, "list a new options dataclass in OPTIONS"
    assert all(cls.__dataclass_params__.frozen for cls in (*OPTIONS, ActionConfig))  # type: ignore[attr-defined]


def test_the_source_reading_finds_an_unfrozen_one(tmp_path):
    (tmp_path / "stage.py").write_text("from dataclasses import dataclass\n\n@dataclass\n"
                                       "class LooseOptions:\n    n: int = 1\n\n"
                                       "@dataclass(frozen=True)\nclass TightOptions:\n    n: int = 1\n")
    assert _options_dataclasses(tmp_path) == {"LooseOptions": False, "TightOptions": True}


def _stage_options() -> list[object]:
    run = RunOptions(paths=["evals"], agent_command="agent", num_runs=3, max_runs=5, shard="1/2",
                     changed_since="main", results=Path("r.json"), fail_on="regression")
    stages = StageOptions.of(run)
    return [run, stages, *(getattr(stages, f.name) for f in dataclasses.fields(stages)),
            stages.agents.schedule, report_options(run, Path("t.md")), BaselineOptions((Path("b.json"),)),
            PublishOptions()]


@pytest.mark.parametrize("options", _stage_options(), ids=lambda o: type(o).__name__)
def test_assigning_to_options_raises(options):
    for field in dataclasses.fields(options):  # type: ignore[arg-type]
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(options, field.name, getattr(options, field.name))


def test_the_stages_options_are_built_from_the_run_s():
    run = RunOptions(paths=["evals"], agent_url="http://localhost:8000", app_name="app", num_runs=3,
                     max_runs=5, concurrency=4, judge_concurrency=2, judge_cache=Path("/cache"),
                     replay=None, shard="2/3", changed_since="main", changed_since_auto=True, alpha=0.1)
    stages = StageOptions.of(run)
    assert (stages.agents.agent_url, stages.agents.app_name, stages.agents.num_runs) == ("http://localhost:8000",
                                                                                        "app", 3)
    assert stages.agents.schedule == ScheduleOptions(concurrency=4, max_concurrency=32, retries=1,
                                                     judge_concurrency=2, agent_url=True)
    assert stages.adaptive == AdaptiveOptions(num_runs=3, max_runs=5, confirm_runs=60, replay=False, alpha=0.1)
    assert stages.scoring == ScoringOptions(judge_concurrency=2, judge_cache=Path("/cache"))
    assert stages.metadata == MetadataOptions(mode="api", paths=("evals",), num_runs=3, concurrency=4)
    assert stages.changed == ChangedOptions(changed_since="main", auto=True, replay=False,
                                            agent_url="http://localhost:8000")
    assert stages.shards == ShardOptions(shard="2/3", num_runs=3, mode="api", app_name="app", max_runs=5)
    replayed = StageOptions.of(RunOptions(replay=Path("runs.json")))
    assert (replayed.adaptive.confirm_runs, replayed.adaptive.replay, replayed.metadata.mode) == (0, True, "replay")
