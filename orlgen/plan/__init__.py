"""Plan: every Python name, type and docstring of a module decided once, from a snapshot."""
