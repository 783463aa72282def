"""Tiny models built offline, and the stand-ins that serve a policy or a model over HTTP."""
