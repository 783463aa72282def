"""ORS environments for the tests, each one shape of published env or one injected fault."""
