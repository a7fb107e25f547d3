"""Pydantic base classes shared by every contract model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class StrictModel(BaseModel):
    """Accepts snake_case and camelCase keys at every level; rejects unknown keys."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
    )


class LenientModel(StrictModel):
    """A model whose unknown keys ADK ignores (or keeps unread): they are kept here only
    until ``checker/inputs/ignored.py`` reports and drops them, so they never change a
    result, a fingerprint or a file written."""

    model_config = ConfigDict(extra="allow")


class AdkConfigModel(BaseModel):
    """ADK's config models (EvalConfig, CustomMetricConfig, the user simulator's): either key
    style; unknown keys ADK ignores are warnings (checker/inputs/ignored.py), not errors."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class OutputModel(BaseModel):
    """Models we write (results, recorded runs): camelCase on output, either on input."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        serialize_by_alias=True,
    )
