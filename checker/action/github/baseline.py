"""The automatic baseline of a pull request: the results file of its merge base on the base
branch, from the results artifact the push-to-main workflow uploads.

The merge base comes from the compare endpoint; the artifacts are listed by their documented
name and matched by the workflow run's head SHA. When the merge base has none (its run failed,
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...models.results import BaselineInfo, Results
from ...report.text import one_line
from .client import GitHubClient, GitHubError
from .workflow import RunContext

ARTIFACT_NAME = "evalcheck-results"   # what examples/workflows/push-main.yml uploads
RESULTS_MEMBER = "results.json"
MAX_WALK_BACK = 20                    # older base-branch commits tried after the merge base
MAX_ZIP_BYTES = 64 * 1024 * 1024      # downloaded artifact
MAX_RESULTS_BYTES = 256 * 1024 * 1024  # results.json once unpacked
MAX_MEMBERS = 1000                    # entries in the zip
DOC = "docs/github-action.md#baseline"


@dataclass
class FoundBaseline:
    path: Path              # where results.json was written
    commit: str             # the base-branch commit whose results these are
    commits_behind: int     # 0: the merge base itself
    artifact_id: int
    run_id: int | None = None


@dataclass
class BaselineSearch:
    found: FoundBaseline | None = None
    notes: list[str] = field(default_factory=list)  # why none was found, or what was skipped
    ref: str = ""  # the base branch


def find_baseline(client: GitHubClient, owner: str, repo: str, *, base_ref: str, base_sha: str,
                  head_sha: str, dest: Path, artifact_name: str = ARTIFACT_NAME) -> BaselineSearch:
    """Look for the baseline of a PR (base branch ``base_ref`` at ``base_sha``, head
    ``head_sha``) and write its results.json to ``dest``. Never raises GitHubError."""
    search = BaselineSearch()
    try:
        merge_base = _merge_base(client, owner, repo, base_sha, head_sha, search)
        candidates = _artifacts_by_commit(client, owner, repo, artifact_name, base_ref, search)
        if not candidates:
            search.notes.append(f"no baseline: no unexpired artifact named {artifact_name!r} in "
                                f"{owner}/{repo} (upload one on pushes to {base_ref}: see {DOC})")
            return search
        tried = [merge_base]
        if _try(client, owner, repo, candidates, merge_base, 0, dest, search):
            return search
        commits = client.list_commits(owner, repo, merge_base, MAX_WALK_BACK + 1)
        older = [c["sha"] for c in commits if isinstance(c, dict) and isinstance(c.get("sha"), str)]
        for behind, sha in enumerate(older[:MAX_WALK_BACK + 1]):
            if sha == merge_base:
                continue
            tried.append(sha)
            if _try(client, owner, repo, candidates, sha, behind, dest, search):
                return search
        search.notes.append(f"no baseline: none of the last {len(tried)} commits of {base_ref} "
                            f"from the merge base {merge_base[:7]} has a usable results artifact "
                            f"named {artifact_name!r}")
    except GitHubError as exc:
        search.notes.append(_refused(exc))
    return search


def _try(client: GitHubClient, owner: str, repo: str, candidates: dict[str, dict[str, Any]],
         sha: str, behind: int, dest: Path, search: BaselineSearch) -> bool:
    artifact = candidates.get(sha)
    if artifact is None or not _fetch(client, owner, repo, artifact, dest, search):
        return False
    run = artifact.get("workflow_run") or {}
    search.found = FoundBaseline(path=dest, commit=sha, commits_behind=behind, artifact_id=artifact["id"],
                                 run_id=run.get("id") if isinstance(run.get("id"), int) else None)
    return True


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
                         search: BaselineSearch) -> dict[str, dict[str, Any]]:
    """Commit SHA -> the artifact to use for it: unexpired, exactly ``name``, uploaded by a
    run in this repository (not a fork's), the base branch's run preferred, then the newest."""
    found: dict[str, dict[str, Any]] = {}
    expired = 0
    for artifact in client.list_artifacts(owner, repo, name):
        run = artifact.get("workflow_run")
        if artifact.get("name") != name or not isinstance(run, dict) or not isinstance(artifact.get("id"), int):
            continue
        if artifact.get("expired"):
            expired += 1
            continue
        head_repo, this_repo = run.get("head_repository_id"), run.get("repository_id")
        if head_repo is not None and this_repo is not None and head_repo != this_repo:
            continue  # uploaded by a run of a fork's pull request: not a baseline
        sha = run.get("head_sha")
        if not isinstance(sha, str):
            continue
        rank = (run.get("head_branch") == base_ref, str(artifact.get("created_at") or ""))
        best = found.get(sha)
        if best is None or rank > best["_rank"]:
            found[sha] = {**artifact, "_rank": rank}
    if expired:
        search.notes.append(f"{expired} expired artifact{'s' if expired != 1 else ''} named {name!r} skipped")
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
                  budget: float | None = None) -> BaselineSearch | None:
    """The baseline of the pull request this job runs for, downloaded to a fresh private
    directory (out of reach of the agent under test); None when the event is not a pull
    request (a push to main is what later pull requests compare with)."""
    base = ctx.pull_request.get("base")
    if not isinstance(base, dict) or not isinstance(base.get("sha"), str) or not base["sha"]:
        return None
    ref = base.get("ref") if isinstance(base.get("ref"), str) and base.get("ref") else "the base branch"
    owner, repo = ctx.owner_repo
    if not token or not owner:
        return BaselineSearch(notes=["no baseline: no github-token to read the base branch's artifacts with"])
    dest = Path(tempfile.mkdtemp(prefix="evalcheck-baseline-")) / RESULTS_MEMBER
    with GitHubClient(token, ctx.api_url, user_agent=user_agent, budget=budget) as client:
        search = find_baseline(client, owner, repo, base_ref=ref, base_sha=base["sha"],
                               head_sha=ctx.head_sha, dest=dest)
    if search.found is None:
        shutil.rmtree(dest.parent, ignore_errors=True)
    search.ref = ref
    return search


def describe(search: BaselineSearch) -> str:
    """One log line: which baseline was found, or why none."""
    found = search.found
    if found is None:
        return "evalcheck: " + ("; ".join(search.notes) or "no baseline")
    where = "the merge base" if found.commits_behind == 0 else \
        f"{found.commits_behind} commit{'s' if found.commits_behind != 1 else ''} behind the merge base"
    return (f"evalcheck: baseline: results of {search.ref} at {found.commit[:7]} ({where}), "
            f"artifact {found.artifact_id}")


def record_search(results: Results, search: BaselineSearch) -> Results:
    """``results`` saying where the automatic baseline came from (branch, commit, how far
    behind; not the temporary file) and, in ``metadata.baselineNotes``, the search's notes."""
    update: dict[str, Any] = {}
    if search.notes:
        update["metadata"] = {**results.metadata, "baselineNotes": list(search.notes)}
    if results.comparison is not None and search.found is not None:
        info = BaselineInfo(ref=search.ref or None, commit=search.found.commit,
                            commits_behind=search.found.commits_behind)
        update["comparison"] = results.comparison.model_copy(update={"baseline": info})
    return results.model_copy(update=update) if update else results
