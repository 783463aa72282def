"""The real SDK server with an ASGI middleware, and the fault proxy: fault injection, said so in each."""
