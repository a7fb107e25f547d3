"""A lone surrogate escape (``"\\ud800"``) in JSON from outside - an agent's reply, an API
server's answer, a replay, eval or shard file - becomes U+FFFD where it is read
(checker/safety/surrogates.py): the run goes on and every report is written, where it used to
end in a serialisation error with no output at all."""

from __future__ import annotations

import json
import sys
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from checker.safety.surrogates import repair, replace_lone
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

LONE = "\\ud800"                # JSON text of a lone high surrogate
PAIR = "\\ud83d\\ude00"          # JSON text of a paired one: U+1F600
REPORTS = ["--results", "out/results.json", "--markdown", "out/report.md", "--junit", "out/junit.xml"]


# ------------------------------------------------------------------ the helper

def test_lone_surrogates_become_the_replacement_character_in_values_and_keys():
    text = ('{"a\\udc00": ["x' + LONE + 'y", {"k": "\\uDBFF"}], "pair": "' + PAIR + '", '
            '"escaped": "\\\\ud800", "n": 1}')
    repaired = repair(json.loads(text), text)
    assert repaired == {"a\ufffd": ["x\ufffdy", {"k": "\ufffd"}], "pair": "\U0001F600",
                        "escaped": "\\ud800", "n": 1}
    assert list(repaired) == ["a\ufffd", "pair", "escaped", "n"]  # key order kept
    json.dumps(repaired, ensure_ascii=False).encode("utf-8")  # no UnicodeEncodeError
    assert repair(json.loads(f'"{LONE}"'), f'"{LONE}"') == "\ufffd"


def test_text_without_a_surrogate_is_not_walked():
    """The check is on the text: JSON with no surrogate escape costs one regex search."""
    value = ["\ud800"]  # cannot come from that text: shows that the value was not looked at
    assert repair(value, '["plain \\u00e9 \\\\ \\ud7ff"]') is value and value == ["\ud800"]


@pytest.mark.parametrize("raw", [
    ('"' + LONE + '"').encode(), b'"\xed\xa0\x80"',  # an escape; a raw surrogate (CESU-8)
    ('"' + LONE + '"').encode("utf-16"), '"\ud800"'.encode("utf-16-le", "surrogatepass")])
def test_bytes_are_checked_as_json_decodes_them(raw):
    assert repair(json.loads(raw), raw) == "\ufffd"


def test_objects_keep_their_type_and_depth_is_no_recursion():
    class Marked(dict):
        pass

    marked = Marked({"\udfff": "\ud800"})
    assert replace_lone([marked]) == [{"\ufffd": "\ufffd"}] and type(marked) is Marked
    deep: list[Any] = ["\ud800"]
    for _ in range(100_000):
        deep = [deep]
    replace_lone(deep)
    while isinstance(deep[0], list):
        deep = deep[0]
    assert deep == ["\ufffd"]


# ------------------------------------------------------------------ through the command line

AGENT = r'''
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] != "user":
        continue
    fine = os.environ["EVALCHECK_EVAL_ID"] == "fine"
    print('{"type": "response", "invocationId": "%s", "finalResponse": {"role": "model", '
          '"parts": [{"text": "%s"}]}, "toolUses": [%s]}'
          % (m["invocationId"], "ok" if fine else "ok LONE PAIR",
             "" if fine else '{"name": "t", "args": {"LONE": "LONE"}}'), flush=True)
'''.replace("LONE", LONE.replace("\\", "\\\\")).replace("PAIR", PAIR.replace("\\", "\\\\"))


def _reports(repo: Path) -> dict[str, Any]:
    """The results, after checking that the markdown and JUnit reports were written."""
    assert "eval cases" in (repo / "out/report.md").read_text(encoding="utf-8")
    ET.parse(repo / "out/junit.xml")
    return json.loads((repo / "out/results.json").read_text(encoding="utf-8"))


def _actual(results: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """eval id -> (case status, the agent's final response as response_match_score saw it)."""
    out = {}
    for c in results["evalSets"][0]["cases"]:
        match = next(m for m in c["metrics"] if m["name"] == "response_match_score")
        out[c["evalId"]] = (c["status"], match["details"]["invocations"][0]["actual"])
    return out


def test_agent_reply_with_a_lone_surrogate_writes_every_report(repo):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("lone", invocation(response="ok")),
                                                      case("fine", invocation(response="ok"))))
    (repo / "agent.py").write_text(AGENT, encoding="utf-8")
    outcome = run_cli(["run", "evals", "--agent-command", f"{sys.executable} agent.py", "--num-runs", "1",
                       "--inference-out", "out/runs.json", *REPORTS], repo)
    assert outcome.code == 1, outcome.output  # "lone" has an unexpected tool call
    assert _actual(_reports(repo)) == {"lone": ("failed", "ok \ufffd \U0001F600"), "fine": ("passed", "ok")}
    recorded = json.loads((repo / "out/runs.json").read_text(encoding="utf-8"))
    (event,) = recorded["runs"][0]["invocations"][0]["intermediateData"]["invocationEvents"]
    assert event["content"]["parts"][0]["functionCall"]["args"] == {"\ufffd": "\ufffd"}


def _lone_suite(repo: Path) -> None:
    """An eval file and a replay file with lone surrogates in an id and in texts."""
    (repo / "evals").mkdir()
    suite = json.dumps(evalset("s", case("fine"), case("lone@", invocation(response="ok @"))), indent=2)
    (repo / "evals/s.evalset.json").write_text(suite.replace("@", LONE), encoding="utf-8")
    runs = json.dumps(replay(("s", "lone@", 1, [invocation(response="ok @")]),
                             ("s", "fine", 1, [invocation()])))
    (repo / "runs.json").write_text(runs.replace("@", "\\uDBFF"), encoding="utf-8")


@pytest.mark.parametrize("shard", [[], ["--shard", "1/1"]], ids=["whole", "outlined"])
def test_replay_and_eval_files_with_lone_surrogates_write_every_report(repo, shard):
    """Read whole, and read in chunks as a shard reads them: the same ids and lines."""
    _lone_suite(repo)
    outcome = run_cli(["run", "evals", "--replay", "runs.json", *shard, *REPORTS], repo)
    assert outcome.code == 0, outcome.output
    results = _reports(repo)
    assert _actual(results) == {"lone\ufffd": ("passed", "ok \ufffd"), "fine": ("passed", "ok")}
    line = (repo / "evals/s.evalset.json").read_text().splitlines().index(f'      "eval_id": "lone{LONE}",') + 1
    assert [c["line"] for c in results["evalSets"][0]["cases"]][1] == line > 1


def test_merged_recorded_runs_with_a_lone_surrogate(repo):
    _lone_suite(repo)
    outcome = run_cli(["run", "evals", "--replay", "runs.json", "--shard", "1/1",
                       "--results", "shard.json", "--inference-out", "shard-runs.json"], repo)
    assert outcome.code == 0, outcome.output
    for name in ("shard.json", "shard-runs.json"):  # as if a shard had written them
        text = (repo / name).read_text(encoding="utf-8")
        (repo / name).write_text(text.replace("\ufffd", LONE), encoding="utf-8")
    outcome = run_cli(["merge", "shard.json", "shard-runs.json", "--inference-out", "merged-runs.json",
                       *REPORTS], repo)
    assert outcome.code == 0, outcome.output
    merged = json.loads((repo / "merged-runs.json").read_text(encoding="utf-8"))
    assert [r["evalId"] for r in merged["runs"]] == ["fine", "lone\ufffd"]
    assert _actual(_reports(repo)) == {"lone\ufffd": ("passed", "ok \ufffd"), "fine": ("passed", "ok")}


class _Server(BaseHTTPRequestHandler):
    """An ADK API server whose app list and answers hold lone surrogates, except for "fine"."""

    def log_message(self, *args: object) -> None:
        pass

    def reply(self, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.reply(f'["app", "x{LONE}"]')

    def do_DELETE(self) -> None:
        self.reply("{}")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/sessions"):
            return self.reply('{"id": "s1"}')
        text = "ok" if body["newMessage"]["parts"][0]["text"] == "fine" else f"ok {LONE} {PAIR}"
        self.reply('[{"invocationId": "e1", "author": "app", '
                   f'"content": {{"role": "model", "parts": [{{"text": "{text}"}}]}}}}]')


def test_api_server_answers_with_a_lone_surrogate_write_every_report(repo):
    """In a run's answer, and in the app list that an unknown app's error names."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    write_json(repo / "evals/s.evalset.json", evalset(
        "s", case("lone", invocation("lone", response="ok")), case("fine", invocation("fine", response="ok"))))
    url = f"http://127.0.0.1:{server.server_port}"
    try:
        outcome = run_cli(["run", "evals", "--agent-url", url, "--app-name", "app", "--num-runs", "1",
                           *REPORTS], repo)
        assert outcome.code == 0, outcome.output
        assert _actual(_reports(repo)) == {"lone": ("passed", "ok \ufffd \U0001F600"), "fine": ("passed", "ok")}
        outcome = run_cli(["run", "evals", "--agent-url", url, "--app-name", "other", "--num-runs", "1",
                           *REPORTS], repo)
    finally:
        server.shutdown()
    # An app the server does not serve is a setup error, said once before any run (exit 2).
    assert outcome.code == 2, outcome.output
    stderr = "".join(ln for ln in outcome.stderr.splitlines(keepends=True)
                     if not ln.startswith("evalcheck: warning: no test_config.json"))
    assert stderr == (f"evalcheck: error: --app-name 'other': the agent server at {url} "
                              "does not serve app 'other'; it serves: app, x\ufffd (pass "
                              "--app-name with one of them)\n")
