"""The safety layer every output passes through: redaction, log-line text, the one output stream, limits, confinement, interrupts."""
