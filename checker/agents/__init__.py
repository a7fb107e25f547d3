"""Run agents: each (eval case, run) becomes a RecordedRun - the runners, the schedule, and the
Action's sandbox and setup-command."""
