"""Every app name the runs will ask for must be one the ADK API server serves.

An app name the server does not serve fails every run of its eval set the same way, before
the agent answers anything: bad input, said once (exit status 2) before any run starts,
with the apps ``GET /list-apps`` returned and where the name came from (``--app-name``,
the case's ``session_input.app_name``, or the eval set id it defaults to).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..errors import InputError
from ..safety.text import one_line
from .base import RunJob, session_spec

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget


def check_served(apps: list[str] | None, jobs: Iterable[RunJob], targets: list[EvalTarget],
                 url: str, load_failures: Mapping[str, str] | None = None) -> None:
    """Raises InputError for the first job whose app name is not in ``apps`` (None: the
    server did not list its apps, so nothing is known). ``load_failures``: what the
    server's log said of the agents it failed to load (by app), quoted for an app it does
    not serve for that reason (@google/adk-devtools lists only the agents it loaded)."""
    if apps is None:
        return
    jobs = list(jobs)
    for job in jobs:
        app = session_spec(job).app_name
        said = (load_failures or {}).get(app)
        if app not in apps and said is not None:
            raise InputError(f"the agent server at {url} failed to load app '{one_line(app, 80)}'; "
                             f"its log says: {one_line(said, 300)}",
                             fix="fix what stops the agent from loading (it runs as the server "
                                 "imports it), then run again")
    served = ", ".join(one_line(a, 80) for a in apps[:20]) + (", …" if len(apps) > 20 else "")
    serves = f"it serves: {served}" if apps else "it serves no app (check the agents folder it was started with)"
    for job in jobs:
        app = session_spec(job).app_name
        if app in apps:
            continue
        near = _nearest(app, apps)
        named = f"'{one_line(app, 80)}'"
        if job.app_name:  # --app-name (the Action's app-name input)
            fix = (f"pass --app-name {one_line(near, 80) if near else 'with one of them'}"
                   if apps else "start the server on the folder that holds the agent")
            raise InputError(f"--app-name {named}: the agent server at {url} does not serve "
                             f"app {named}; {serves}", fix=fix)
        target = next((t for t in targets if t.eval_set_id == job.eval_set_id
                       and job.eval_id in t.case_ids), None)
        given = job.case.session_input
        if given is not None and given.app_name:
            path = f"$.eval_cases[{_index(target, job.eval_id)}].session_input.app_name"
            message = f"the agent server at {url} does not serve app {named}; {serves}"
        else:
            path = "$.eval_set_id"
            message = (f"the case '{one_line(job.eval_id, 80)}' has no session_input.app_name, so "
                       f"its app is the eval set id {named}, which the agent server at {url} "
                       f"does not serve; {serves}")
        fix = (f"did you mean '{one_line(near, 80)}'? " if near else "") + \
            "set session_input.app_name to the app's name, or pass --app-name"
        raise InputError(message, file=target.loaded.display_path if target else None,
                         path=path if target and not target.loaded.legacy else None,
                         line=target.loaded.case_lines.get(job.eval_id) if target else None,
                         fix=fix)


def _index(target: EvalTarget | None, eval_id: str) -> int | str:
    if target is None:
        return "*"
    order = target.loaded.case_ids or [c.eval_id for c in target.loaded.eval_set.eval_cases]
    return order.index(eval_id) if eval_id in order else "*"


def _nearest(app: str, apps: list[str]) -> str | None:
    """The served app meant: the only one, one whose name starts with ``app`` ("shop" for
    "shop_agent"), or the closest spelling."""
    if len(apps) == 1:
        return apps[0]
    starts = [a for a in apps if a.startswith(app) or app.startswith(a)]
    if len(starts) == 1:
        return starts[0]
    close = difflib.get_close_matches(app, apps, n=1, cutoff=0.5)
    return close[0] if close else None
