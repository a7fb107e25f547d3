"""Local stand-ins for the SaaS APIs the tests and benchmarks talk to (on 127.0.0.1 only)."""
