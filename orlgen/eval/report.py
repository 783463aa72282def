"""The eval table a person reads, and the same numbers as JSON. Columns: docs/eval.md."""

from __future__ import annotations

import json
from typing import Any

from .stats import SplitStats


def text(stats: list[SplitStats], summary: dict[str, Any], *, by_task: bool = False) -> str:
    blocks = [_block(split) + (_tasks(split) if by_task else "") for split in stats]
    footer = (
        f"{summary['rollouts']} rollouts in {summary['wall_s']:.1f} s "
        f"({summary['rollouts_per_s']:.2f} rollouts/s, concurrency {summary['concurrency']})"
    )
    if summary.get("out"):
        footer += f"; trajectories: {summary['out']}"
    if summary.get("interrupted"):
        footer = "interrupted: " + footer
    return "\n\n".join([*blocks, footer]) + "\n"


def as_json(stats: list[SplitStats], summary: dict[str, Any]) -> str:
    """Every number of the table, and `tasks`: one entry per task, always."""
    tasks = [task.as_dict() for split in stats for task in split.per_task]
    report = {**summary, "splits": [split.as_dict() for split in stats], "tasks": tasks}
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def numbers(s: SplitStats) -> list[tuple[str, str]]:
    """The split's numbers as (name, value) lines: the text table's and the HTML report's."""
    unscored = s.rollouts - s.scored
    reasons = ", ".join(f"{reason} {count}" for reason, count in s.unscored.items())
    return [
        ("tasks", f"{s.tasks}"),
        ("rollouts", f"{s.rollouts} ({s.k} per task)"),
        ("mean reward", _reward(s)),
        ("pass@1", _share(s.pass_at_1)),
        (f"pass@{s.k}", _share(s.pass_at_k)),
        (f"pass^{s.k}", _share(s.pass_hat_k)),
        ("scored", f"{s.scored} / {s.rollouts}" + (f" (unscored {unscored}: {reasons})" if unscored else "")),
        ("tool calls / rollout", f"{s.tool_calls_per_rollout:.2f}"),
        ("tool-error rate", _share(s.tool_error_rate)),
        ("mean turns", f"{s.mean_turns:.2f}"),
        ("wall time", f"{s.wall_s:.1f} s"),
        ("equal-reward groups", _groups(s)),
    ]


def _block(s: SplitStats) -> str:
    lines = numbers(s)
    width = max(len(name) for name, _ in lines)
    head = f"{s.env} / {s.split}  (pass: reward >= {s.threshold:g})"
    return "\n".join([head, *(f"  {name.ljust(width)}  {value}" for name, value in lines)])


def _reward(s: SplitStats) -> str:
    if s.mean_reward is None:
        return "- (nothing scored)"
    error = "" if s.reward_stderr is None else f" ± {s.reward_stderr:.3f}"
    return f"{s.mean_reward:.3f}{error}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _groups(s: SplitStats) -> str:
    share = s.equal_group_share
    if share is None:
        return "-"
    return f"{100 * share:.1f}% ({s.equal_groups} of {s.groups} groups teach nothing)"


def _tasks(s: SplitStats) -> str:
    """`--by-task`: a line per task: its mean reward, passes of its rollouts, and `equal` when its
    GRPO group teaches nothing."""
    lines = [f"  {'task':>6}  {'mean':>6}  {'passes':>7}"]
    for task in s.per_task:
        mean = "-" if task.mean is None else f"{task.mean:.3f}"
        passes = f"{task.passes}/{len(task.rewards)}"
        lines.append(f"  {task.task_index:>6}  {mean:>6}  {passes:>7}" + ("  equal" if task.equal else ""))
    return "\n" + "\n".join(lines)
