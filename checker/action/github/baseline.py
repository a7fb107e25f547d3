"""The automatic baseline of a pull request: the results file of its merge base on the base
branch, from the results artifact the push-to-main workflow uploads.

The merge base comes from the compare endpoint; the artifacts are listed by their documented
name (every page) and matched by the workflow run's head SHA. Only main's own results are a
baseline: an artifact is used only when the workflow run that uploaded it was a ``push``
(``BASELINE_EVENTS``) on the base branch of this very repository - its ``event``,
``head_branch`` and head repository are read from the run itself (``GET
/actions/runs/{id}``), and a run or artifact that leaves any of them out is not used (fail
closed): a pull request's run, even one whose head is the merge base, never is.
When the merge base has none (its run failed,
was skipped, or the artifact expired), up to ``MAX_WALK_BACK`` older commits of the base branch
are tried, and how far behind the baseline is gets recorded. Every way of not finding one is a
note for the report, never an error: a pull request is still evaluated without a baseline.
Everything here is a read (``actions: read``, ``contents: read``), so a fork PR's read-only
token works too.
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...models.results import BaselineFile, BaselineInfo, Results
from ...safety.text import one_line
from .client import GitHubClient, GitHubError
from .workflow import RunContext

ARTIFACT_NAME = "evalcheck-results"   # what examples/workflows/push-main.yml uploads
RESULTS_MEMBER = "results.json"
MAX_WALK_BACK = 20                    # older base-branch commits tried after the merge base
MAX_ZIP_BYTES = 64 * 1024 * 1024      # downloaded artifact
MAX_RESULTS_BYTES = 256 * 1024 * 1024  # results.json once unpacked
MAX_MEMBERS = 1000                    # entries in the zip
BASELINE_EVENTS = ("push",)           # the runs whose results are main's
DOC = "docs/github-action.md#baseline"


@dataclass
class FoundBaseline:
    path: Path              # where results.json was written
    commit: str             # the base-branch commit whose results these are
    commits_behind: int     # 0: the merge base itself
    artifact_id: int
    run_id: int | None = None
    event: str = ""         # the uploading run's event (push)


@dataclass
class BaselineSearch:
    found: FoundBaseline | None = None  # the newest: the merge base's results, or the nearest
    notes: list[str] = field(default_factory=list)  # why none was found, or what was skipped
    ref: str = ""  # the base branch
    history: list[FoundBaseline] = field(default_factory=list)  # every one found, newest first
    private: Path | None = None  # the directory they were downloaded to (removed after the run)


def find_baseline(client: GitHubClient, owner: str, repo: str, *, base_ref: str, base_sha: str,
                  head_sha: str, dest: Path, artifact_name: str = ARTIFACT_NAME) -> BaselineSearch:
    """Look for the baseline of a PR (base branch ``base_ref`` at ``base_sha``, head
    ``head_sha``) and write its results.json to ``dest``. Never raises GitHubError."""
    search = BaselineSearch()
    found = list(baselines(client, owner, repo, base_ref=base_ref, base_sha=base_sha,
                           head_sha=head_sha, dest_for=lambda sha: dest, search=search,
                           artifact_name=artifact_name, wanted=1))
    search.found = found[0] if found else None
    return search


def baselines(client: GitHubClient, owner: str, repo: str, *, base_ref: str, base_sha: str,
              head_sha: str, dest_for, search: BaselineSearch,
              artifact_name: str = ARTIFACT_NAME, wanted: int = 1) -> list[FoundBaseline]:
    """Up to ``wanted`` results of the base branch, newest first: the merge base's, then
    older commits' (at most ``MAX_WALK_BACK`` behind). Each results.json is written to
    ``dest_for(commit)``; why fewer were found goes into ``search.notes``."""
    found: list[FoundBaseline] = []
    try:
        merge_base = _merge_base(client, owner, repo, base_sha, head_sha, search)
        candidates = _artifacts_by_commit(client, owner, repo, artifact_name, base_ref, search)
        if not candidates:
            search.notes.append(f"no baseline: no unexpired artifact named {artifact_name!r} of a "
                                f"push to {base_ref} in {owner}/{repo} (upload one on pushes to "
                                f"{base_ref}: see {DOC})")
            return found
        commits = [merge_base]

        def history() -> Iterator[tuple[int, str]]:
            yield 0, merge_base  # the base branch's older commits are listed only when needed
            listed = client.list_commits(owner, repo, merge_base, MAX_WALK_BACK + 1)
            older = [c["sha"] for c in listed[:MAX_WALK_BACK + 1]
                     if isinstance(c, dict) and isinstance(c.get("sha"), str)]
            for behind, sha in enumerate(older):
                if sha != merge_base:
                    commits.append(sha)
                    yield behind, sha

        runs = RunCheck(client, owner, repo, base_ref, search)
        for behind, sha in history():
            for artifact in candidates.get(sha, []):
                if not runs.ok(artifact):
                    continue
                one = _take(client, owner, repo, artifact, sha, behind, dest_for(sha), search, runs)
                if one is not None:
                    found.append(one)
                    break
            if len(found) >= wanted:
                return found
        if not found:
            search.notes.append(f"no baseline: none of the last {len(commits)} commits of {base_ref} "
                                f"from the merge base {merge_base[:7]} has a usable results artifact "
                                f"named {artifact_name!r} from a push to {base_ref}")
    except GitHubError as exc:
        search.notes.append(_refused(exc))
    return found


def _take(client: GitHubClient, owner: str, repo: str, artifact: dict[str, Any], sha: str,
          behind: int, dest: Path, search: BaselineSearch, runs: RunCheck) -> FoundBaseline | None:
    if not _fetch(client, owner, repo, artifact, dest, search):
        return None
    run_id = artifact["workflow_run"]["id"]
    return FoundBaseline(path=dest, commit=sha, commits_behind=behind, artifact_id=artifact["id"],
                         run_id=run_id, event=runs.events.get(run_id, ""))


class RunCheck:
    """Whether an artifact's workflow run is one of main's own: ``event`` in
    ``BASELINE_EVENTS``, ``head_branch`` the base branch, head repository and repository
    this one - each read from the run itself; anything missing is a no. One request a run."""

    def __init__(self, client: GitHubClient, owner: str, repo: str, base_ref: str,
                 search: BaselineSearch):
        self.client, self.owner, self.repo, self.base_ref = client, owner, repo, base_ref
        self.search = search
        self.events: dict[int, str] = {}
        self._seen: dict[int, bool] = {}

    def ok(self, artifact: dict[str, Any]) -> bool:
        run_id = artifact["workflow_run"]["id"]
        if run_id not in self._seen:
            self._seen[run_id] = self._check(artifact, run_id)
        return self._seen[run_id]

    def _check(self, artifact: dict[str, Any], run_id: int) -> bool:
        try:
            run = self.client.get_workflow_run(self.owner, self.repo, run_id)
        except GitHubError as exc:
            if exc.status in (401, 403):
                raise
            self.search.notes.append(f"artifact {artifact['id']} skipped: its workflow run {run_id} "
                                     f"could not be read (HTTP {exc.status})")
            return False
        this = f"{self.owner}/{self.repo}".lower()
        event, branch = run.get("event"), run.get("head_branch")
        head_repo, repo = (_full_name(run.get("head_repository")), _full_name(run.get("repository")))
        why = None
        if not isinstance(event, str) or event not in BASELINE_EVENTS:
            why = f"uploaded by a {event or 'unnamed'} run, not a {' or '.join(BASELINE_EVENTS)}"
        elif branch != self.base_ref:
            why = f"its run was on {branch or 'no named branch'}, not {self.base_ref}"
        elif head_repo is None or repo is None or head_repo.lower() != this or repo.lower() != this:
            why = f"its run's head repository is {head_repo or 'not named'}, not {this}"
        elif run.get("head_sha") != artifact["workflow_run"]["head_sha"]:
            why = "its run's commit is not the artifact's"
        if why is not None:
            self.search.notes.append(f"artifact {artifact['id']} skipped: {why} (run {run_id})")
            return False
        self.events[run_id] = str(event)  # a str: checked above
        return True


def _full_name(repo: Any) -> str | None:
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) and name else None


def _merge_base(client: GitHubClient, owner: str, repo: str, base_sha: str, head_sha: str,
                search: BaselineSearch) -> str:
    try:
        body = client.compare_commits(owner, repo, base_sha, head_sha)
    except GitHubError as exc:
        if exc.status in (401, 403):
            raise
        # e.g. 404 for a head GitHub does not know: the base commit is the next best guess
        search.notes.append(f"merge base not found (HTTP {exc.status}); using the base commit {base_sha[:7]}")
        return base_sha
    sha = (body.get("merge_base_commit") or {}).get("sha") if isinstance(body, dict) else None
    return sha if isinstance(sha, str) and sha else base_sha


def _artifacts_by_commit(client: GitHubClient, owner: str, repo: str, name: str, base_ref: str,
                         search: BaselineSearch) -> dict[str, list[dict[str, Any]]]:
    """Commit SHA -> the artifacts that may be its results, newest first: unexpired, exactly
    ``name``, from every page of the listing, whose ``workflow_run`` names its id, commit,
    the base branch, and this repository as both repository and head repository (a field
    left out - all are optional in GitHub's description - is a no). Their runs are checked
    by RunCheck before one is used."""
    found: dict[str, list[dict[str, Any]]] = {}
    expired = skipped = 0
    for artifact in client.list_artifacts(owner, repo, name):
        run = artifact.get("workflow_run")
        if artifact.get("name") != name or not isinstance(run, dict) or not isinstance(artifact.get("id"), int):
            continue
        if artifact.get("expired"):
            expired += 1
            continue
        head_repo, this_repo, sha = run.get("head_repository_id"), run.get("repository_id"), run.get("head_sha")
        if not (isinstance(run.get("id"), int) and isinstance(head_repo, int) and head_repo == this_repo
                and run.get("head_branch") == base_ref and isinstance(sha, str) and sha):
            skipped += 1  # a fork's, another branch's, or one that does not say: not main's
            continue
        found.setdefault(sha, []).append(artifact)
    for listed in found.values():
        listed.sort(key=lambda a: str(a.get("created_at") or ""), reverse=True)
    if expired:
        search.notes.append(f"{expired} expired artifact{'s' if expired != 1 else ''} named {name!r} skipped")
    if skipped:
        search.notes.append(f"{skipped} artifact{'s' if skipped != 1 else ''} named {name!r} not from "
                            f"{base_ref} of {owner}/{repo} (another branch, a fork, or unnamed) skipped")
    return found


def _fetch(client: GitHubClient, owner: str, repo: str, artifact: dict[str, Any], dest: Path,
           search: BaselineSearch) -> bool:
    """Download the artifact and write its results.json to ``dest``; False (with a note) if
    it has none or it is not a results file that ``--baseline`` would accept (so that a bad
    artifact is skipped here, never bad input for the run)."""
    from ...compare.results_file import load_suite_results
    from ...errors import InputError

    try:
        data = client.download_artifact(owner, repo, artifact["id"], MAX_ZIP_BYTES)
        text = results_from_zip(data)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        load_suite_results(dest, "baseline")  # one shard's results are skipped too
    except InputError as exc:
        dest.unlink(missing_ok=True)
        why = str(exc).replace(str(dest), RESULTS_MEMBER)  # the temporary path says nothing
        search.notes.append(f"artifact {artifact['id']} skipped: {one_line(why, 240)}")
        return False
    except GitHubError as exc:
        if exc.status in (401, 403):
            raise
        search.notes.append(f"artifact {artifact['id']} could not be downloaded: HTTP {exc.status} "
                            f"{one_line(exc.message, 200)}")
        return False
    except (ValueError, RecursionError, zipfile.BadZipFile) as exc:
        search.notes.append(f"artifact {artifact['id']} skipped: {one_line(str(exc), 200)}")
        return False
    return True


def results_from_zip(data: bytes) -> str:
    """The text of the artifact's results.json. Nothing is extracted to disk (no member name
    is ever used as a path); sizes and the number of entries are bounded against zip bombs.
    Raises ValueError (or BadZipFile) when there is no usable results.json."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"more than {MAX_MEMBERS} entries in the zip")
        named = [m for m in members if not m.is_dir()
                 and m.filename.replace("\\", "/").rsplit("/", 1)[-1] == RESULTS_MEMBER]
        if not named:
            raise ValueError(f"no {RESULTS_MEMBER} in the artifact")
        # the top-level one (upload-artifact of evalcheck-report/), else the shallowest
        member = min(named, key=lambda m: (m.filename.count("/"), m.filename))
        if member.flag_bits & 0x1:
            raise ValueError(f"{RESULTS_MEMBER} is encrypted")
        if member.file_size > MAX_RESULTS_BYTES:
            raise ValueError(f"{RESULTS_MEMBER} is larger than {MAX_RESULTS_BYTES} bytes")
        with archive.open(member) as stream:
            # the declared size may lie: read at most one byte more than allowed
            raw = stream.read(MAX_RESULTS_BYTES + 1)
        if len(raw) > MAX_RESULTS_BYTES:
            raise ValueError(f"{RESULTS_MEMBER} is larger than {MAX_RESULTS_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{RESULTS_MEMBER} is not UTF-8") from None


def _refused(exc: GitHubError) -> str:
    if exc.status in (401, 403, 404):
        need = f" (needs {exc.accepted_permissions})" if exc.accepted_permissions else ""
        return (f"no baseline: the token cannot read the repository's artifacts or commits: "
                f"HTTP {exc.status}{need}; grant `actions: read` in the workflow's `permissions:` "
                f"(see {DOC})")
    return f"no baseline: HTTP {exc.status} {one_line(exc.message, 200)} ({exc.method} {exc.path})"


# --- the Action's `baseline: auto` -----------------------------------------------------------

def auto_baseline(ctx: RunContext, token: str, *, user_agent: str = "evalcheck",
                  budget: float | None = None, depth: int = 1) -> BaselineSearch | None:
    """The baseline of the pull request this job runs for, downloaded to a fresh private
    directory (out of reach of the agent under test); None when the event is not a pull
    request (a push to main is what later pull requests compare with)."""
    base = ctx.pull_request.get("base")
    if not isinstance(base, dict) or not isinstance(base.get("sha"), str) or not base["sha"]:
        return None
    ref = base.get("ref")
    ref = ref if isinstance(ref, str) and ref else "the base branch"
    owner, repo = ctx.owner_repo
    if not token or not owner:
        return BaselineSearch(notes=["no baseline: no github-token to read the base branch's artifacts with"])
    private = Path(tempfile.mkdtemp(prefix="evalcheck-baseline-"))
    search = BaselineSearch()
    with GitHubClient(token, ctx.api_url, user_agent=user_agent, budget=budget) as client:
        search.history = list(baselines(
            client, owner, repo, base_ref=ref, base_sha=base["sha"], head_sha=ctx.head_sha,
            dest_for=lambda sha: private / sha / RESULTS_MEMBER, search=search, wanted=depth))
    search.found = search.history[0] if search.history else None
    if search.found is None:
        shutil.rmtree(private, ignore_errors=True)
    search.ref = ref
    search.private = private
    return search


def describe(search: BaselineSearch) -> str:
    """One log line: which baseline was found, or why none."""
    found = search.found
    if found is None:
        return "evalcheck: " + ("; ".join(search.notes) or "no baseline")
    where = "the merge base" if found.commits_behind == 0 else \
        f"{found.commits_behind} commit{'s' if found.commits_behind != 1 else ''} behind the merge base"
    run = f" of run {found.run_id} ({found.event or 'push'} to {search.ref})" if found.run_id else ""
    older = search.history[1:]
    pooled = (f"; pooled with {len(older)} older result{'s' if len(older) != 1 else ''} of "
              f"{search.ref} (" + ", ".join(f.commit[:7] for f in older) + ")") if older else ""
    return (f"evalcheck: baseline: results of {search.ref} at {found.commit[:7]} ({where}), "
            f"artifact {found.artifact_id}{run}{pooled}")


def record_search(results: Results, search: BaselineSearch) -> Results:
    """``results`` saying where the automatic baseline came from (branch, commit, how far
    behind; not the temporary file) and, in ``metadata.baselineNotes``, the search's notes."""
    update: dict[str, Any] = {}
    if search.notes:
        update["metadata"] = {**results.metadata, "baselineNotes": list(search.notes)}
    if results.comparison is not None and search.found is not None:
        history = [BaselineFile(commit=f.commit) for f in search.history] \
            if len(search.history) > 1 else None
        info = BaselineInfo(ref=search.ref or None, commit=search.found.commit,
                            commits_behind=search.found.commits_behind, history=history)
        update["comparison"] = results.comparison.model_copy(update={"baseline": info})
    return results.model_copy(update=update) if update else results
