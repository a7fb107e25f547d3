"""Running the user's agent: each (eval case, run) becomes a RecordedRun."""
