"""The progress line on stderr while rollouts run: done / total, mean reward so far, errors.

On a terminal the line is rewritten in place (`\\r`); elsewhere (a log file, CI) nothing is
written unless `--progress` asks for it, and then plain lines, at most one every `every` seconds
and the last one always, so a long run's log stays short.
"""

from __future__ import annotations

import time
from typing import TextIO

from .rollout import Rollout
from .rundir import RETRIED


class Progress:
    def __init__(self, total: int, stream: TextIO, *, terminal: bool, every: float = 5.0) -> None:
        self.total = total
        self.stream = stream
        self.terminal = terminal
        self.every = every
        self.done = 0
        self.errors = 0
        self.rewards: list[float] = []
        self.start = time.monotonic()
        self.shown = float("-inf")

    def update(self, rollout: Rollout) -> None:
        self.done += 1
        self.errors += rollout.outcome in RETRIED
        if rollout.reward is not None:
            self.rewards.append(rollout.reward)
        now = time.monotonic()
        if self.terminal:
            self.stream.write("\r" + self.line(now))
        elif now - self.shown >= self.every or self.done == self.total:
            self.stream.write(self.line(now) + "\n")
            self.shown = now
        self.stream.flush()

    def close(self) -> None:
        """End the terminal's line, so what follows starts on its own."""
        if self.terminal and self.done:
            self.stream.write("\n")
            self.stream.flush()

    def line(self, now: float) -> str:
        mean = f"{sum(self.rewards) / len(self.rewards):.3f}" if self.rewards else "-"
        rate = self.done / (now - self.start) if now > self.start else 0.0
        return f"rollouts {self.done}/{self.total}  mean reward {mean}  errors {self.errors}  ({rate:.2f}/s)"
