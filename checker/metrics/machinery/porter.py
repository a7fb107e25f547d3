"""NLTK's Porter stemmer (its default NLTK_EXTENSIONS mode: what rouge-score, and so ADK's
response_match_score, stems with), imported without the rest of NLTK.

``import nltk.stem.porter`` first runs ``nltk/__init__.py``, which imports most of NLTK and
numpy and compiles some 250 regular expressions: about 0.35 s of CPU in every run that
scores a response, for a module that needs none of it. The stemmer's module imports only a
few leaf modules of NLTK (``nltk.stem.api``, and for its demo ``nltk.redos`` and
``nltk.termsec``). Here they are imported from the installed NLTK, through its own package
path (a folder, or the image's bytecode zip), with empty stand-ins for the packages
``nltk`` and ``nltk.stem`` that exist only while they load; then every ``nltk`` name is
taken out of ``sys.modules`` again, so that a later ``import nltk`` gets all of NLTK, as
ever. The stemmer is NLTK's own code. In a process that has imported NLTK already, or when
this NLTK's stemmer needs more of NLTK than that, the ordinary import is used.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from typing import Any


def porter_stemmer() -> Any:
    """A new ``nltk.stem.porter.PorterStemmer()`` (NLTK_EXTENSIONS mode)."""
    if "nltk" not in sys.modules:
        try:
            return _imported_alone().PorterStemmer()
        except (ImportError, AttributeError):
            pass  # this NLTK's stemmer needs more of it: the ordinary way below
    from nltk.stem import porter

    return porter.PorterStemmer()


def _imported_alone() -> types.ModuleType:
    spec = importlib.util.find_spec("nltk")  # a top-level name: found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed as a package")
    package = types.ModuleType("nltk")
    package.__path__ = list(spec.submodule_search_locations)
    stem = types.ModuleType("nltk.stem")
    stem.__path__ = [os.path.join(folder, "stem") for folder in package.__path__]
    package.stem = stem  # type: ignore[attr-defined]
    sys.modules["nltk"], sys.modules["nltk.stem"] = package, stem
    try:
        return importlib.import_module("nltk.stem.porter")
    finally:
        for name in [n for n in sys.modules if n == "nltk" or n.startswith("nltk.")]:
            del sys.modules[name]
