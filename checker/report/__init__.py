"""Reports rendered from a Results object: terminal lines, markdown, JUnit XML."""
