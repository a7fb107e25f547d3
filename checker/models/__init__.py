"""Plain typed data passed between the stages: eval sets, recorded runs, results."""
