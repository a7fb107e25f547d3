"""A small ADK shop app for the bridge tests and bench/bench_adk.py (its model is scripted:
TEST ONLY): a root agent with two tools, one writing session state, and a checkout sub-agent
reached by ``transfer_to_agent`` whose tool keeps the cart in session state."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext

from .scripted_model import ScriptedShopModel

# keyword -> (sku, name, price, in stock)
CATALOGUE = {"mug": ("MUG-1", "Blue mug", 12.0, 40), "lamp": ("LAMP-2", "Desk lamp", 35.0, 3),
             "pen": ("PEN-3", "Fountain pen", 8.5, 0), "tea": ("TEA-4", "Green tea", 6.25, 120)}
BY_SKU = {sku: (name, price, stock) for sku, name, price, stock in CATALOGUE.values()}


def find_product(query: str, tool_context: ToolContext) -> dict:
    """Finds a product of the shop by a word of its name."""
    for keyword, (sku, name, price, _) in CATALOGUE.items():
        if keyword in query.lower():
            tool_context.state["last_viewed"] = sku  # the checkout agent adds what was viewed
            return {"sku": sku, "name": name, "price": price}
    return {"error": f"no product matches '{query}'"}


def check_stock(sku: str) -> dict:
    """How many of a product the shop has in stock."""
    name, _, stock = BY_SKU.get(sku, ("unknown", 0.0, 0))
    return {"sku": sku, "name": name, "in_stock": stock}


def add_to_cart(sku: str, quantity: int, tool_context: ToolContext) -> dict:
    """Adds a quantity of a product to the customer's cart (kept in session state)."""
    cart = dict(tool_context.state.get("cart", {}))
    cart[sku] = cart.get(sku, 0) + quantity
    total = round(sum(BY_SKU[s][1] * n for s, n in cart.items() if s in BY_SKU), 2)
    tool_context.state["cart"] = cart
    tool_context.state["cart_total"] = total
    return {"name": BY_SKU.get(sku, ("unknown",))[0], "quantity": quantity, "total": total}


checkout_agent = LlmAgent(
    name="checkout_agent",
    model=ScriptedShopModel(),
    description="Adds products to the customer's cart.",
    instruction=("You manage the cart of {customer}. Prices are in {currency}. "
                 "The product the customer looked at last: {last_viewed?}."),
    tools=[add_to_cart],
)

root_agent = LlmAgent(
    name="shop_assistant",
    model=ScriptedShopModel(),
    description="Helps customers find products.",
    instruction=("You help {customer} find products of the shop. Prices are in {currency}. "
                 "Hand anything about the cart to checkout_agent."),
    tools=[find_product, check_stock],
    sub_agents=[checkout_agent],
)
