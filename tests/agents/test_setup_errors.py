"""Setup errors are exit status 2, said once: a real ADK agent without model credentials or
with a refused key (through the bridge and through a real ``adk api_server``), and an app
name the server does not serve. A failure of the agent's own making stays a failed run."""

from __future__ import annotations

import json
import resource
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from checker.agents.setup_errors import setup_problem
from tests.judges.fake_gemini import FakeGemini, Reply

from .helpers import PY, REPO, case, cli_env, write_eval_set

EXAMPLE_AGENT = REPO / "examples" / "agents" / "adk_weather"
EXAMPLE_EVALS = REPO / "examples" / "weather" / "agent_evals"
ADK_EVALS = REPO / "tests" / "adk_agent" / "evals"
BRIDGE = Path(PY).parent / "evalcheck-adk"
ADK_BIN = Path(PY).parent / "adk"
CREDENTIALS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
               "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
               "GOOGLE_GEMINI_BASE_URL", "EVALCHECK_GEMINI_BASE_URL")


def evalcheck(cwd: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    """The run, and the CPU seconds it took, its agents' included (this machine is shared:
    its wall-clock time says more about the other jobs than about evalcheck)."""
    clean = {k: v for k, v in cli_env(CI="true").items() if k not in CREDENTIALS}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([PY, "-c", "from checker.cli import main; main()", "run", *args,
                           "--results", str(cwd / "results.json")],
                          cwd=cwd, capture_output=True, text=True, timeout=180,
                          env={**clean, **env})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one_error(done: subprocess.CompletedProcess, cwd: Path) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.startswith("evalcheck: error: ")
    assert done.stderr.count("\n") == 1, done.stderr  # one line: no per-run lines, no server log
    assert not (cwd / "results.json").exists()
    return done.stderr


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served(tmp_path: Path, agent: Path) -> tuple[str, str]:
    """--agent-url and --agent-server-command of a real adk api_server serving a copy of
    ``agent`` (the server writes next to its agents)."""
    agents = tmp_path / "agents"
    shutil.copytree(agent, agents / agent.name,
                    ignore=shutil.ignore_patterns(".adk", "__pycache__", "evals"))
    port = free_port()
    return (f"http://127.0.0.1:{port}",
            f"{shlex.quote(str(ADK_BIN))} api_server --port {port} {shlex.quote(str(agents))}")


# --- the classifier (pure) ------------------------------------------------------------

def test_setup_problems_are_the_sdks_own_words():
    missing = setup_problem("the agent raised ValueError: No API key was provided. Please pass "
                            "a valid API key.")
    assert missing.kind == "credentials" and "GOOGLE_API_KEY" in missing.fix
    refused = setup_problem("the agent raised ClientError: 400 INVALID_ARGUMENT. {'error': "
                            "{'message': 'API key not valid. Please pass a valid API key.'}}")
    assert refused.kind == "authentication"
    assert setup_problem("turn 1: the agent server answered HTTP 500: Internal Server Error",
                         "INFO: started\nValueError: No API key was provided.\nINFO: 500").evidence \
        == "ValueError: No API key was provided."
    assert setup_problem("the agent raised ClientError: 401 UNAUTHENTICATED. {}").kind == \
        "authentication"


def test_other_failures_are_not_setup_problems():
    assert setup_problem("the agent raised KeyError: 'city'", "Traceback\nKeyError: 'city'") is None
    assert setup_problem("the agent said: no api key was provided by the user") is None  # prose
    assert setup_problem(None, "ValueError: No API key was provided.") is None  # no error
    # The simulated user's credentials are the judges' business (their own message), not the agent's.
    assert setup_problem("simulated user: model request rejected (HTTP 403 PERMISSION_DENIED: "
                         "API key not valid)") is None


# --- the real ADK, through the bridge -------------------------------------------------

pytest.importorskip("google.adk")


def test_adk_example_without_credentials_exits_2_once_within_10_s(tmp_path):
    command = f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(EXAMPLE_AGENT))}"
    began = time.monotonic()
    done, cpu = evalcheck(tmp_path, str(EXAMPLE_EVALS), "--agent-command", command)
    seconds = time.monotonic() - began
    err = one_error(done, tmp_path)
    assert err.startswith("evalcheck: error: the agent has no model credentials: the first 4 "
                          "runs all failed the same way before it answered anything: the agent "
                          "reported an error in turn 1: the agent raised ValueError: No API key "
                          "was provided."), err
    assert "(give the agent's model its credentials in the environment evalcheck runs in: for " \
           "Gemini, GOOGLE_API_KEY (or GEMINI_API_KEY)" in err
    assert "Traceback" not in err and "last output" not in err
    # Four agent processes (2 cases x 2 runs) start, fail their first turn and are stopped:
    # about 5.5 CPU seconds in all; 6 to 7 s of wall-clock time at a load of 6 on this
    # shared 2-core machine (a generous wall-clock bound, so that a busy neighbour fails no
    # build).
    assert cpu < 10, cpu
    assert seconds < 40, seconds


def refusing_gemini() -> FakeGemini:
    fake = FakeGemini()
    fake._thread.start()
    body = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                      "status": "INVALID_ARGUMENT",
                      "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                   "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}
    fake.on(lambda prompt: True, Reply(status=400, body=json.dumps(body).encode(),
                                       headers={"Content-Type": "application/json"}))
    return fake


def test_adk_example_with_a_refused_key_exits_2_once(tmp_path):
    fake = refusing_gemini()
    command = f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(EXAMPLE_AGENT))}"
    done, _ = evalcheck(tmp_path, str(EXAMPLE_EVALS), "--agent-command", command,
                        "--num-runs", "1", "--concurrency", "2",
                        GOOGLE_API_KEY="not-a-key", GOOGLE_GEMINI_BASE_URL=fake.url)
    err = one_error(done, tmp_path)
    assert err.startswith("evalcheck: error: the agent's model refused its credentials: the "
                          "first 2 runs all failed the same way before it answered anything: "
                          "the agent reported an error in turn 1: the agent raised ClientError: "
                          "400 INVALID_ARGUMENT."), err
    assert "(check the key or credentials the agent's model uses" in err
    assert "not-a-key" not in err
    # The key reached the (fake) API: a refusal, not a missing key; and a setup error is
    # not retried (--retries 1 by default), it would fail the same way.
    assert len(fake.requests) == 2


def test_a_failure_of_the_agents_own_making_is_a_failed_run(tmp_path):
    """Every first turn failing the same way, but not for want of setup: exit 1, per case."""
    script = tmp_path / "agent.py"
    script.write_text("import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n"
                      "    if m['type'] == 'start':\n        print(json.dumps({'type': 'ready'}), flush=True)\n"
                      "    if m['type'] == 'user':\n        print(json.dumps({'type': 'error', "
                      "'invocationId': m['invocationId'], 'message': \"KeyError: 'city'\"}), flush=True)\n")
    path = write_eval_set(tmp_path / "evals", "set", [case(f"c{i}", turns=1) for i in range(2)])
    done, _ = evalcheck(tmp_path, str(path), "--agent-command", f"{shlex.quote(PY)} agent.py")
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("2 of 2 runs errored - run 1: the agent reported an error in "
                             "turn 1: KeyError: 'city'") == 2


# --- the real adk api_server -------------------------------------------------------------

def test_wrong_app_name_exits_2_naming_the_apps_served(tmp_path):
    url, server = served(tmp_path, REPO / "tests" / "adk_agent" / "weather_app")
    done, _ = evalcheck(tmp_path, str(ADK_EVALS), "--agent-url", url,
                        "--agent-server-command", server, "--app-name", "weather")
    err = one_error(done, tmp_path)
    assert err == (f"evalcheck: error: --app-name 'weather': the agent server at {url} does not "
                   "serve app 'weather'; it serves: weather_app (pass --app-name weather_app)\n")


def test_an_eval_sets_app_name_the_server_does_not_serve_names_the_file(tmp_path):
    evals = tmp_path / "evals"
    shutil.copytree(ADK_EVALS, evals)
    eval_file = evals / "weather_app.evalset.json"
    data = json.loads(eval_file.read_text())
    data["eval_cases"][0]["session_input"]["app_name"] = "shop"
    eval_file.write_text(json.dumps(data, indent=2))
    url, server = served(tmp_path, REPO / "tests" / "adk_agent" / "weather_app")
    done, _ = evalcheck(tmp_path, str(evals), "--agent-url", url, "--agent-server-command", server)
    err = one_error(done, tmp_path)
    assert err.startswith("evalcheck: error: evals/weather_app.evalset.json:"), err
    assert (f" at $.eval_cases[0].session_input.app_name: the agent server at {url} does not "
            "serve app 'shop'; it serves: weather_app (did you mean 'weather_app'? set "
            "session_input.app_name to the app's name, or pass --app-name)\n") in err


def test_adk_example_on_an_api_server_without_credentials_exits_2_once(tmp_path):
    url, server = served(tmp_path, EXAMPLE_AGENT)
    done, cpu = evalcheck(tmp_path, str(EXAMPLE_EVALS), "--agent-url", url,
                          "--agent-server-command", server, "--app-name", "adk_weather")
    err = one_error(done, tmp_path)
    # Each run's error is the server's HTTP 500 (on a loaded machine, once a dropped
    # connection); why is in the server's log, shown once.
    assert err.startswith("evalcheck: error: the agent has no model credentials: the first 4 "
                          "runs all failed the same way before it answered anything: "), err
    assert "; its log says: ValueError: No API key was provided." in err
    assert err.count("No API key was provided") == 1  # the server's log once, not per run
    assert cpu < 10, cpu


def test_a_server_listening_on_another_port_fails_at_once_naming_it(tmp_path):
    """adk api_server started on another port than --agent-url's: said at once (its own
    "Uvicorn running on ..." line), not after the 120 s start-up wait."""
    url, _ = served(tmp_path, REPO / "tests" / "adk_agent" / "weather_app")
    other = free_port()
    server = f"{shlex.quote(str(ADK_BIN))} api_server --port {other} {shlex.quote(str(tmp_path / 'agents'))}"
    began = time.monotonic()
    done, _ = evalcheck(tmp_path, str(ADK_EVALS), "--agent-url", url, "--agent-server-command", server)
    assert time.monotonic() - began < 30  # about 3 s: the server's start-up, then a second
    err = one_error(done, tmp_path)
    assert err.startswith(f"evalcheck: error: the agent server cannot be used: the agent server "
                          f"says it listens on http://127.0.0.1:{other} (port {other}), but "
                          f"--agent-url is {url} (port {url.rsplit(':', 1)[1]}): give both the "
                          f"same port (e.g. --agent-url http://127.0.0.1:{other}, or --port "
                          f"{url.rsplit(':', 1)[1]} in the server command); its last output: "), err
    assert f"Uvicorn running on http://127.0.0.1:{other}" in err


def test_a_server_command_that_exits_fails_at_once_with_its_status_and_last_lines(tmp_path):
    """adk api_server on a folder that is not there exits 2 at once: said with its status and
    its own last lines, without waiting for it to answer."""
    url, _ = served(tmp_path, REPO / "tests" / "adk_agent" / "weather_app")
    port = url.rsplit(":", 1)[1]
    server = f"{shlex.quote(str(ADK_BIN))} api_server --port {port} {shlex.quote(str(tmp_path / 'nowhere'))}"
    began = time.monotonic()
    done, _ = evalcheck(tmp_path, str(ADK_EVALS), "--agent-url", url, "--agent-server-command", server)
    assert time.monotonic() - began < 30  # under a second here
    err = one_error(done, tmp_path)
    assert err.startswith(f"evalcheck: error: the agent server cannot be used: the agent server "
                          f"command exited with status 2 before answering at {url}; its last "
                          "output: Usage: adk api_server [OPTIONS] [AGENTS_DIR] | "), err
    assert f"Error: Invalid value for '[AGENTS_DIR]': Directory '{tmp_path / 'nowhere'}' does " \
           "not exist." in err


KEYED_AGENT = '''import os

from google.adk.agents import LlmAgent

if not os.environ.get("GOOGLE_API_KEY"):
    raise {error}("GOOGLE_API_KEY is not set")
root_agent = LlmAgent(name="keyed", model="gemini-2.5-flash", instruction="Answer.")
'''


@pytest.mark.parametrize(("error", "quoted"), [
    # google-adk answers HTTP 500 "Failed to load agent" and logs that line and a traceback.
    ("ValueError", "Failed to load agent keyed: google.adk.cli.utils.base_agent_loader."
                   "_AgentLoadError: Fail to load 'keyed' module. GOOGLE_API_KEY is not set"),
    # Any other exception goes through to uvicorn: "Internal Server Error", and its traceback.
    ("RuntimeError", "RuntimeError: Fail to load 'keyed' module. GOOGLE_API_KEY is not set"),
])
def test_an_agent_that_raises_as_adk_api_server_loads_it_is_quoted_from_the_servers_log(
        tmp_path, error, quoted):
    """adk api_server loads an agent at its first turn; one that raises fails every turn
    with an HTTP 500 whose why is only in the server's log: said once, in its own words,
    exit status 2 (not a failed run per case)."""
    agents = tmp_path / "agents"
    (agents / "keyed").mkdir(parents=True)
    (agents / "keyed" / "__init__.py").write_text("from . import agent\n")
    (agents / "keyed" / "agent.py").write_text(KEYED_AGENT.format(error=error))
    hello = case("hello", turns=1)
    hello.session_input.app_name = "keyed"
    write_eval_set(tmp_path / "evals", "keyed", [hello])
    port = free_port()
    done, _ = evalcheck(tmp_path, "evals", "--agent-url", f"http://127.0.0.1:{port}",
                        "--agent-server-command",
                        f"{shlex.quote(str(ADK_BIN))} api_server --port {port} {shlex.quote(str(agents))}")
    err = one_error(done, tmp_path)
    assert err == ("evalcheck: error: the agent cannot start: the first 2 runs all failed the same "
                   "way before it answered anything: the agent server failed to load app "
                   f"'keyed'; its log says: {quoted}\n")


def test_an_agent_that_raises_on_a_server_evalcheck_did_not_start_says_where_to_look(tmp_path):
    """A server already running (--agent-url alone): its log is not evalcheck's to read, so
    the message says the server could not load the app and that its log says why."""
    agents = tmp_path / "agents"
    (agents / "keyed").mkdir(parents=True)
    (agents / "keyed" / "__init__.py").write_text("from . import agent\n")
    (agents / "keyed" / "agent.py").write_text(KEYED_AGENT.format(error="ValueError"))
    hello = case("hello", turns=1)
    hello.session_input.app_name = "keyed"
    write_eval_set(tmp_path / "evals", "keyed", [hello])
    port = free_port()
    clean = {k: v for k, v in cli_env().items() if k not in CREDENTIALS}
    server = subprocess.Popen([str(ADK_BIN), "api_server", "--port", str(port), str(agents)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**clean, "ADK_DISABLE_LOCAL_STORAGE": "1"})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        done, _ = evalcheck(tmp_path, "evals", "--agent-url", f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    err = one_error(done, tmp_path)
    assert err == ("evalcheck: error: the agent cannot start: the first 2 runs all failed the same "
                   "way before it answered anything: the agent server failed to load app 'keyed' "
                   "(turn 1: the agent server answered HTTP 500: {\"detail\":\"Failed to load "
                   "agent\"}; its log says why)\n")


HELPER = '''import http.server, sys
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.BaseHTTPRequestHandler)
print(f"Listening on http://127.0.0.1:{sys.argv[1]}", flush=True)
server.serve_forever()
'''


def test_a_helper_server_on_another_port_is_not_mistaken_for_the_agent_server(tmp_path):
    """The server command starts a helper (not the ADK API) that says it listens on another
    port, then adk api_server on --agent-url's: the run goes on as usual."""
    url, server = served(tmp_path, REPO / "tests" / "adk_agent" / "weather_app")
    (tmp_path / "helper.py").write_text(HELPER)
    command = f"{shlex.quote(PY)} helper.py {free_port()} & {server}"
    done, _ = evalcheck(tmp_path, str(ADK_EVALS), "--agent-url", url, "--agent-server-command",
                        command, "--num-runs", "1")
    # The weather eval set's wrong_expectation case fails by design: exit 1, every run scored.
    assert done.returncode == 1, done.stderr
    runs = [r for c in json.loads((tmp_path / "results.json").read_text())["evalSets"][0]["cases"]
            for r in c["runs"]]
    assert len(runs) == 4 and all(r.get("error") is None for r in runs), runs
