"""Comparing results with a baseline: statistics, fingerprints, verdict rules, the gate.

Pure functions on the results models (checker/models/results.py); see docs/comparing.md.
"""
