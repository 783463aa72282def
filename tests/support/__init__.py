"""What the tests stand on, apart from the tests themselves.

- `envs/`: small ORS environments, each reproducing one shape of published env or one fault
  (served by the real SDK server: `ServerProcess("tests.support.envs.counting:Counting")`).
- `servers/`: the real SDK server with an ASGI middleware (`python -m tests.support.servers.X
  module:Env PORT`, or `ServerProcess(target, entry="tests.support.servers.X")`), and the
  fault proxy that stands in front of one. Every fault they inject says so.
- `models/`: the tiny offline Qwen3 and Qwen2.5-VL, the scripted chat policy, the tiny model
  behind `/v1/completions`.
- `cli.py`: the one way a test runs the installed `orlgen` command.
- `two_ranks.py`: the torchrun script of the two-rank GRPO test.
"""
