"""Compare: results against a baseline (statistics, fingerprints, labels), verdict rules, adaptive runs, the gate.

Mostly pure functions on the results models (checker/models/results.py); ``command`` is
``evalcheck compare``, ``adaptive`` asks for more runs of undecided cases. See docs/comparing.md.
"""
