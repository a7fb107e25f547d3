"""LLM-as-judge plumbing: the Gemini client, the on-disk judge cache and the per-run service.

Nothing here imports ``google.genai`` at import time: the SDK is loaded on the first judge
call that misses the cache, so ``evalcheck --help`` and deterministic metrics stay fast.
"""
