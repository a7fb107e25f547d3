"""The GitHub Action's shell around the engine: its inputs, entrypoint, publishing and the GitHub API."""
