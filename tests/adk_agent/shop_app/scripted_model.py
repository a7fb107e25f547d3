"""TEST ONLY: an offline, deterministic stand-in for an LLM, for the shop app.

It reads the request the way a model would (system instruction, tools offered, the
conversation so far) and scripts the next step: a function call while information is
missing, a text answer once the tool results are in. No network, no randomness.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

KEYWORDS = ("mug", "lamp", "pen", "tea")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def _texts(content: types.Content) -> str:
    return " ".join(p.text for p in content.parts or [] if p.text)


def _last_user_request(request: LlmRequest) -> str:
    """The latest real user text (ADK shows other agents' turns as 'For context:' text)."""
    for content in reversed(request.contents):
        text = _texts(content)
        if content.role == "user" and text and not text.startswith("For context"):
            return text
    return ""


def _quantity(text: str) -> int:
    found = re.search(r"\b(\d+|" + "|".join(NUMBERS) + r")\b", text.lower())
    if found is None:
        return 1
    word = found[1]
    return int(word) if word.isdigit() else NUMBERS[word]


class ScriptedShopModel(BaseLlm):
    model: str = "scripted-shop"

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted-shop.*"]

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        parts = self._next_parts(llm_request)
        prompt_size = sum(len(_texts(c)) for c in llm_request.contents)
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=120 + prompt_size // 4,
                candidates_token_count=12 * len(parts),
                total_token_count=120 + prompt_size // 4 + 12 * len(parts)),
            model_version="scripted-shop-1")

    def _next_parts(self, request: LlmRequest) -> list[types.Part]:
        instruction = str(request.config.system_instruction or "")
        customer = (re.search(r"(?:help|cart of) (\w+)", instruction) or [None, "friend"])[1]
        currency = (re.search(r"Prices are in (\w+)", instruction) or [None, "EUR"])[1]
        last = request.contents[-1] if request.contents else types.Content(parts=[])
        results = {p.function_response.name: p.function_response.response
                   for p in last.parts or [] if p.function_response}
        text = _last_user_request(request)
        if "add_to_cart" in request.tools_dict:
            return self._checkout_step(instruction, text, results, customer, currency)
        if "check_stock" in results:
            r = results["check_stock"]
            have = f"{r['in_stock']} are in stock" if r["in_stock"] else "it is sold out"
            return [types.Part(text=f"{customer}, the {r['name']}: {have}.")]
        if "find_product" in results:
            r = results["find_product"]
            if "error" in r:
                return [types.Part(text=f"Sorry {customer}, we do not sell that.")]
            if "stock" in text.lower():
                return [types.Part(function_call=types.FunctionCall(
                    name="check_stock", args={"sku": r["sku"]}))]
            return [types.Part(text=f"{customer}, we have the {r['name']} at "
                                    f"{r['price']:.2f} {currency}.")]
        if re.search(r"\b(add|cart|buy)\b", text.lower()):
            return [types.Part(text="Let me pass you to checkout."),
                    types.Part(function_call=types.FunctionCall(
                        name="transfer_to_agent", args={"agent_name": "checkout_agent"}))]
        words = re.findall(r"[a-z]+", text.lower())
        query = next((w for w in words if w in KEYWORDS), words[-1] if words else "")
        return [types.Part(function_call=types.FunctionCall(name="find_product",
                                                            args={"query": query}))]

    def _checkout_step(self, instruction: str, text: str, results: dict, customer: str,
                       currency: str) -> list[types.Part]:
        if "add_to_cart" in results:
            r = results["add_to_cart"]
            return [types.Part(text=f"Added {r['quantity']} x {r['name']} to your cart, "
                                    f"{customer}; the total is {r['total']:.2f} {currency}.")]
        sku = (re.search(r"looked at last: ([A-Z]+-\d+)", instruction) or [None, None])[1]
        if sku is None:
            return [types.Part(text=f"Which product shall I add, {customer}?")]
        return [types.Part(function_call=types.FunctionCall(
            name="add_to_cart", args={"sku": sku, "quantity": _quantity(text)}))]
