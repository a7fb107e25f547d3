"""Report: a Results object rendered (terminal lines, markdown, JUnit XML) and written to its files."""
