"""Capture: the stage that talks to an ORS server, and capturing again as a snapshot was captured."""
