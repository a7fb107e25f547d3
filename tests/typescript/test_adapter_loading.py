"""Which export of MODULE ``evalcheck-adk-ts`` evaluates, and what it says when it finds none
or cannot load the module (one line, as a protocol error and on stderr; exit status 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tshelpers import AGENTS, NODE_MODULES, adapter_exchange, final_texts, require_packages

ECHO = (AGENTS / "iqai" / "echo.mjs").as_uri()
IMPORTS = f'import {{ AgentBuilder }} from "@iqai/adk";\nimport {{ EchoModel, echoAgent }} from "{ECHO}";\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    require_packages()
    (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    return tmp_path


def module(project: Path, body: str, name: str = "agent.mjs") -> Path:
    path = project / name
    path.write_text(IMPORTS + body)
    return path


@pytest.mark.parametrize("body, answers", [
    ('export const rootAgent = echoAgent("root");', "root"),
    ('export const root_agent = echoAgent("snake");', "snake"),
    ('export const agent = echoAgent("plain");', "plain"),
    ('export default echoAgent("default");', "default"),
    # An AgentBuilder, built by the adapter.
    ('export const agent = AgentBuilder.create("built_here").withModel(new EchoModel("builder"));',
     "builder"),
    # What AgentBuilder.build() returns, under a name of its own.
    ('export const app = await AgentBuilder.create("b").withModel(new EchoModel("built")).build();',
     "built"),
    # A function returning one, async too.
    ('export default async () => AgentBuilder.create("f").withModel(new EchoModel("factory")).build();',
     "factory"),
    ('export function rootAgent() { return echoAgent("function"); }', "function"),
    # rootAgent wins over other exports; a lone root wins over its own sub-agents.
    ('export const other = echoAgent("other");\nexport const rootAgent = echoAgent("first");', "first"),
    ('export const helper = echoAgent("sub");\nexport const main = echoAgent("tree", [helper]);',
     "tree"),
])
def test_finds_the_agent(project, body, answers):
    messages, stderr, status = adapter_exchange(module(project, body))
    assert status == 0, stderr
    assert messages[0]["type"] == "ready" and messages[0]["evalSets"] == "any"
    assert final_texts(messages) == [f"{answers}: hi"]


GOOGLE_ECHO = (AGENTS / "google" / "echo.mjs").as_uri()


@pytest.mark.parametrize("body, answers", [
    ("export const rootAgent = echoAgent('google_root');", "google_root"),
    ("export const app = new App({ name: 'my_app', rootAgent: echoAgent('in_app') });", "in_app"),
])
def test_finds_a_google_adk_agent_or_app(project, body, answers):
    path = project / "agent.mjs"
    path.write_text(f'import {{ App }} from "@google/adk";\nimport {{ echoAgent }} from "{GOOGLE_ECHO}";\n{body}\n')
    messages, stderr, status = adapter_exchange(path)
    assert status == 0, stderr
    assert final_texts(messages) == [f"{answers}: hi"]


def test_a_commonjs_module(project):
    path = project / "agent.cjs"
    path.write_text(f'const {{ LlmAgent }} = require("@iqai/adk");\n'
                    f'module.exports = {{ rootAgent: new LlmAgent({{ name: "cjs", description: "d", '
                    f'model: "gemini-2.5-flash" }}), version: 1 }};\n')
    messages, stderr, status = adapter_exchange(path, texts=())
    assert status == 0, stderr
    assert messages == [{"type": "ready", "sessions": "many", "concurrent": 8, "evalSets": "any",
                         "session": "s1"}]


@pytest.mark.parametrize("args, offered, serves", [((), 24, 24), (("--concurrent", "3"), 24, 3),
                                                   ((), None, 8)])
def test_it_serves_as_many_sessions_as_the_checker_offers_unless_told(project, args, offered, serves):
    """The first start's "concurrent" (the most runs the checker may have in flight) is what
    the adapter says it serves, so that one process takes them all; --concurrent N wins."""
    path = module(project, 'export const rootAgent = echoAgent("root");')
    messages, stderr, status = adapter_exchange(path, *args, offered=offered)
    assert status == 0, stderr
    assert messages[0]["type"] == "ready" and messages[0]["concurrent"] == serves


def test_export_option_names_the_agent(project):
    path = module(project, 'export const rootAgent = echoAgent("root");\n'
                           'export function makeAgent() { return echoAgent("named"); }')
    messages, stderr, status = adapter_exchange(path, "--export", "makeAgent")
    assert status == 0, stderr
    assert final_texts(messages) == ["named: hi"]


@pytest.mark.parametrize("body, args, says", [
    ('export const answer = 42;\nexport function helper() { return 1; }', (),
     "agent.mjs exports no ADK agent (its exports: answer, helper): export the agent to evaluate as "
     "rootAgent, root_agent, agent or default: an LlmAgent/Agent (any BaseAgent), an AgentBuilder, "
     "what AgentBuilder.build() returns, or a function returning one of them (async too); or name "
     "the export with --export NAME"),
    ('export const a = echoAgent("a");\nexport const b = echoAgent("b");', (),
     "agent.mjs exports several root agents (a, b): export the one to evaluate as rootAgent, or "
     "name it with --export NAME"),
    ('export const rootAgent = echoAgent("root");', ("--export", "missing"),
     "agent.mjs has no export missing (its exports: rootAgent)"),
    ('export const answer = 42;', ("--export", "answer"),
     "the export answer of agent.mjs is not an ADK agent, AgentBuilder, built agent or a function "
     "returning one"),
    ('throw new Error("the module failed on purpose");', (),
     "cannot load agent.mjs: Error: the module failed on purpose"),
])
def test_says_what_is_wrong(project, body, args, says):
    messages, stderr, status = adapter_exchange(module(project, body), *args)
    assert status == 1
    assert messages == [{"type": "error", "message": says}]
    assert f"evalcheck-adk-ts: {says}" in stderr


def test_missing_module(project):
    messages, _, status = adapter_exchange(project / "nowhere.mjs")
    assert status == 1
    assert messages[0]["message"].startswith("agent module not found: ")


def test_typescript_needs_the_projects_tsx(tmp_path):
    """A .ts module loads through tsx installed in its project; without it, the fix is said."""
    require_packages()
    (tmp_path / "node_modules" / "@iqai").mkdir(parents=True)
    (tmp_path / "node_modules" / "@iqai" / "adk").symlink_to(NODE_MODULES / "@iqai" / "adk")
    path = tmp_path / "agent.ts"
    path.write_text(IMPORTS + 'export const rootAgent: unknown = echoAgent("typed");\n')
    messages, _, status = adapter_exchange(path)
    assert status == 1
    assert messages == [{"type": "error", "message":
                         "agent.ts is TypeScript and tsx is not installed in its project: npm install "
                         "--save-dev tsx, or give evalcheck-adk-ts the compiled .js (tsc's output)"}]
    (tmp_path / "node_modules" / "tsx").symlink_to(NODE_MODULES / "tsx")
    messages, stderr, status = adapter_exchange(path)
    assert status == 0, stderr
    assert final_texts(messages) == ["typed: hi"]


def test_a_failing_turn_fails_its_run_only(project):
    path = module(project, 'export const rootAgent = echoAgent("root");')
    messages, stderr, status = adapter_exchange(path, texts=("raise",))
    assert status == 0, stderr
    assert messages[-1] == {"type": "error", "invocationId": "inv-1", "session": "s1",
                            "message": "the agent raised Error: the model failed on purpose"}


def test_what_the_agent_prints_goes_to_its_log(project):
    path = module(project, 'console.log("hello from the agent");\n'
                           'export const rootAgent = echoAgent("root");')
    messages, stderr, status = adapter_exchange(path)
    assert status == 0 and "hello from the agent" in stderr
    assert final_texts(messages) == ["root: hi"]
