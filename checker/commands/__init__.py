"""The commands that conduct several stages (run, compare, merge, publish): the layer above the
stages, the only one besides cli.py, action/config.py and the option modules that reads RunOptions."""
