"""The snapshot: the one intermediate form (interface and tasks files) and its schema's JSON helpers."""
