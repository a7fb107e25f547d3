"""The metric registry: every ``Metric`` subclass in a module of this package, by name.

Adding a metric is adding one module here (and its test); what several metrics share lives
in ``machinery/``. Modules must not import heavy
SDKs at import time; they import them inside ``score``.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from .base import Metric

EFFICIENCY_METRICS = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                      "invocation_duration_v1")


@cache
def registry() -> dict[str, type[Metric]]:
    found: dict[str, type[Metric]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg or info.name.startswith("_") or info.name == "base":  # machinery/: not metrics
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Metric) and value.name
                    and value.__module__ == module.__name__):
                if value.name in found:
                    raise RuntimeError(f"metric {value.name} is defined twice")
                found[value.name] = value
    return dict(sorted(found.items()))


def get_metric(name: str) -> type[Metric] | None:
    return registry().get(name)
