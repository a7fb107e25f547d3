"""The instances the Vertex AI metrics send (``evaluateInstances``): the ones
``client.evals.evaluate`` builds for a dataset row (vertex.py says why we build them)."""

from __future__ import annotations

from typing import Any

from ...models.evalset import Content, IntermediateData, Invocation, InvocationEvents, content_text


def _content_dict(content: Content | None, role: str | None = None) -> dict[str, Any] | None:
    if content is None:
        return None
    data = content.model_dump(exclude_none=True)
    if role and not data.get("role"):
        data["role"] = role
    return data


def _text(text: str, role: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _instance_data(content: dict[str, Any]) -> dict[str, Any]:
    return {"contents": {"contents": [content]}}


def single_turn_instance(prompt: str, response: str, reference: str | None = None) -> dict[str, Any]:
    """The instance ``evaluate()`` sends for a dataset row of prompt/response(/reference) text."""
    user, model = _text(prompt, "user"), _text(response, "model")
    instance: dict[str, Any] = {
        "prompt": _instance_data(user),
        "response": _instance_data(model),
        "agent_data": {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": [
            {"author": "user", "content": user}, {"author": "model", "content": model}]}]},
    }
    if reference is not None:
        instance["reference"] = _instance_data(_text(reference, "model"))
    return instance


def _agents(invocations: list[Invocation]) -> dict[str, dict[str, Any]]:
    agents: dict[str, dict[str, Any]] = {}
    for invocation in invocations:
        details = invocation.app_details.agent_details if invocation.app_details else {}
        for name, agent in details.items():
            if name in agents:  # first occurrence wins, as in ADK
                continue
            config: dict[str, Any] = {"agent_id": agent.name, "instruction": agent.instructions}
            if agent.tool_declarations:
                config["tools"] = agent.tool_declarations
            agents[name] = config
    return agents


def _turn_events(invocation: Invocation, agent: str) -> list[dict[str, Any]]:
    events = [{"author": "user", "content": _content_dict(invocation.user_content, "user")}]
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        events += [{"author": e.author, "content": _content_dict(e.content)}
                   for e in data.invocation_events if e.content is not None]
    elif isinstance(data, IntermediateData):
        # ADK drops these; the judge of tool use needs them. Calls and responses are
        # paired by position (the recorded shape keeps no interleaving).
        calls = [{"role": "model", "parts": [{"function_call": c.model_dump(exclude_none=True)}]}
                 for c in data.tool_uses]
        answers = [{"role": "user", "parts": [{"function_response": r.model_dump(exclude_none=True)}]}
                   for r in data.tool_responses]
        for index in range(max(len(calls), len(answers))):
            if index < len(calls):
                events.append({"author": agent, "content": calls[index]})
            if index < len(answers):
                events.append({"author": agent, "content": answers[index]})
        for author, parts in data.intermediate_responses:
            text = "\n".join(p.text for p in parts if p.text)
            if text:
                events.append({"author": author, "content": _text(text, "model")})
    if invocation.final_response is not None:
        events.append({"author": agent, "content": _content_dict(invocation.final_response, "model")})
    return events


def conversation_instance(invocations: list[Invocation]) -> dict[str, Any]:
    """The whole run as Vertex agent data: one turn per invocation, every event kept."""
    agents = _agents(invocations)
    # Events should name an agent of ``agents``; with one agent its name is the author.
    author = next(iter(agents)) if len(agents) == 1 else "agent"
    turns = [{"turn_index": i, "turn_id": inv.invocation_id or f"turn_{i}",
              "events": _turn_events(inv, author)} for i, inv in enumerate(invocations)]
    agent_data: dict[str, Any] = {"turns": turns}
    if agents:
        agent_data["agents"] = agents
    return {"agent_data": agent_data}


def final_text(invocation: Invocation) -> str:
    return content_text(invocation.final_response)
