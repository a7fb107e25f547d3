"""The safety layer every input and output passes through: bounded JSON and surrogate repair,
redaction, log-line text, the one output stream, confinement, interrupts."""
