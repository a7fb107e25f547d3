"""Score: recorded runs of a case -> CaseResult with every configured metric, custom metrics included."""
