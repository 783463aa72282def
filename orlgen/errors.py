"""The generator's error root: every failure the CLI reports is an `OrlgenError` whose message
is one line naming the problem (the runtime has its own root, `orlgen.runtime.RuntimeFailure`)."""


class OrlgenError(Exception):
    """A failure of orlgen's generator, with a one-line message."""
