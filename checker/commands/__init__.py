"""The commands that conduct several stages (run, compare, merge, publish): the layer above the
stages, the only one besides cli.py, action/ and the option modules that reads RunOptions; each
stage gets its own options, built here (stage_options.py)."""
