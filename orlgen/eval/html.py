"""`report.html` of a run directory: one self-contained page a person opens to look at a run.

It holds the run's configuration, the table of each split (the numbers of the text table), a
reward histogram per split (inline SVG), the per-task rows (sortable by any column), and every
trajectory, expandable (`<details>`): its messages, tool calls, tool results with their images,
and reward. Nothing is fetched: CSS and the sorting script are inline, images are the data URLs
the rows keep in `media` (`records.py`), and a Content-Security-Policy forbids any other source.

Everything a server or a model wrote is untrusted: every piece of it goes through `html.escape`,
and the page carries no data inside its script (the script reads the table cells), so a task text
holding `</script>` or `<img onerror=...>` is shown as text.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ..disk import write_atomic
from .errors import EvalError
from .report import numbers
from .rundir import CONFIG, ROWS, THRESHOLD, Row, read_rows
from .stats import SplitStats, summarize

REPORT = "report.html"
BINS = 10

# An image is shown only as a base64 data URL of a raster type: nothing else reaches `src`.
_IMAGE_URL = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+=*")


def write_report(run_dir: Path) -> Path:
    """Write `run_dir/report.html` from `config.json` (optional) and `rollouts.jsonl`, temp then
    rename, and return its path."""
    config = _config(run_dir / CONFIG)
    rows = read_rows(run_dir / ROWS)
    target = run_dir / REPORT
    write_atomic(target, render(config, rows).encode())
    return target


def _config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot read {path}: {exc}") from exc
    if not isinstance(config, dict):
        raise EvalError(f"{path} is not a run configuration (not a JSON object)")
    return config


def render(config: dict[str, Any], rows: list[Row]) -> str:
    """The page, as text. Trajectories in plan order (env, split, task, sample), as rows come
    in the order rollouts finished; the numbers are `stats.summarize`'s, with the run's k and
    pass threshold, as the text table counts them."""
    rows = sorted(rows, key=lambda row: row.rollout.key)
    rollouts = [row.rollout for row in rows]
    k = _int(config.get("k")) or max(Counter(r.key[:3] for r in rollouts).values(), default=1)
    threshold = config.get(THRESHOLD)
    stats = summarize(rollouts, k, threshold if isinstance(threshold, int | float) else None)
    title = f"orlgen eval: {config.get('subject') or 'run'}"
    body = [
        f"<h1>{_e(title)}</h1>",
        _config_table(config),
        "<h2>Splits</h2>",
        _summary_table(stats) if stats else "<p>No rollouts yet.</p>",
        _histograms(stats),
        "<h2>Tasks</h2>",
        '<p class="hint">Click a column heading to sort by it.</p>',
        _task_table(stats),
        f"<h2>Trajectories ({len(rows)})</h2>",
        *(_trajectory(i, row.data) for i, row in enumerate(rows)),
    ]
    return _PAGE.format(title=_e(title), style=_STYLE, script=_SCRIPT, body="\n".join(body))


def _e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), quote=True)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _config_table(config: dict[str, Any]) -> str:
    if not config:
        return '<p class="hint">No config.json in this run directory.</p>'
    cells = "".join(f"<tr><th>{_e(key)}</th><td>{_e(value)}</td></tr>" for key, value in sorted(config.items()))
    return f'<details class="config"><summary>Configuration</summary><table>{cells}</table></details>'


def _summary_table(stats: list[SplitStats]) -> str:
    """One column per split, one line per number: the text table's lines (docs/eval.md defines
    each), and the pass threshold its head states."""
    lines = [("pass threshold", [f"{s.threshold:g}" for s in stats])]
    per_split = [numbers(s) for s in stats]
    lines += [(name, [split[i][1] for split in per_split]) for i, (name, _) in enumerate(per_split[0])]
    head = "".join(f"<th>{_e(s.env)} / {_e(s.split)}</th>" for s in stats)
    body = "".join(
        f"<tr><th>{_e(name)}</th>{''.join(f'<td>{_e(v)}</td>' for v in values)}</tr>" for name, values in lines
    )
    return f'<table class="summary" id="summary"><thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>'


def _histograms(stats: list[SplitStats]) -> str:
    figures = []
    for s in stats:
        rewards = [float(r) for task in s.per_task for r in task.rewards if r is not None]
        figures.append(f"<figure>{_histogram(rewards)}<figcaption>{_e(s.env)} / {_e(s.split)}: {_e(len(rewards))} "
                       f"scored, {_e(s.rollouts - len(rewards))} unscored</figcaption></figure>")  # fmt: skip
    return f'<div class="histograms">{"".join(figures)}</div>' if figures else ""


def _histogram(rewards: list[float]) -> str:
    """Counts of rewards in `BINS` equal bins over [0, 1], or over [min, max] when a reward falls
    outside it, as an SVG bar chart (each bar's title gives its range and count)."""
    low, high = (0.0, 1.0) if all(0.0 <= r <= 1.0 for r in rewards) else (min(rewards), max(rewards))
    width = (high - low) / BINS or 1.0
    counts = [0] * BINS
    for reward in rewards:
        counts[min(BINS - 1, int((reward - low) / width))] += 1
    tallest = max(counts, default=0) or 1
    bars = []
    for i, count in enumerate(counts):
        height = 100 * count / tallest
        label = f"[{low + i * width:.3g}, {low + (i + 1) * width:.3g}{']' if i == BINS - 1 else ')'}: {count}"
        bars.append(
            f'<rect x="{10 + 30 * i}" y="{110 - height:.1f}" width="26" height="{height:.1f}">'
            f"<title>{_e(label)}</title></rect>"
        )
    axis = f'<text x="10" y="124">{low:.3g}</text><text x="310" y="124" text-anchor="end">{high:.3g}</text>'
    return f'<svg class="histogram" viewBox="0 0 320 128" width="320" height="128">{"".join(bars)}{axis}</svg>'


_TASK_COLUMNS = (
    ("env", "text"),
    ("split", "text"),
    ("task", "number"),
    ("rewards", "text"),
    ("mean", "number"),
    ("passes", "number"),
    ("equal", "text"),
)


def _task_table(stats: list[SplitStats]) -> str:
    """A row per task (`SplitStats.per_task`, the `--by-task` lines): its rewards, mean, passes
    and whether its group's rewards are all equal."""
    head = "".join(f'<th data-type="{kind}">{name}</th>' for name, kind in _TASK_COLUMNS)
    body = []
    for task in (task for s in stats for task in s.per_task):
        cells = [
            (task.env, task.env),
            (task.split, task.split),
            (task.task_index, task.task_index),
            (", ".join("-" if r is None else f"{r:g}" for r in task.rewards),) * 2,
            ("-" if task.mean is None else f"{task.mean:.3f}", "" if task.mean is None else task.mean),
            (f"{task.passes} of {len(task.rewards)}", task.passes),
            ("yes" if task.equal else "no",) * 2,
        ]
        body.append("<tr>" + "".join(f'<td data-v="{_e(v)}">{_e(t)}</td>' for t, v in cells) + "</tr>")
    return (
        f'<table class="tasks sortable" id="tasks"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _trajectory(i: int, row: dict[str, Any]) -> str:
    reward = row.get("reward")
    outcome = row.get("outcome")
    summary = (
        f"{_e(row['env'])} / {_e(row['split'])} · task {_e(row['task_index'])} · sample {_e(row['sample'])} · "
        f"reward {_e('-' if reward is None else reward)} · {_e(outcome)} · {_e(row.get('turns', 0))} turns"
    )
    facts = {
        "stop": row.get("stop"),
        "reason": row.get("reason"),
        "step rewards": row.get("rewards"),
        "tool calls": row.get("tool_calls"),
        "tool errors": row.get("tool_errors"),
        "seconds": row.get("timings"),
    }
    meta = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts.items() if v not in (None, ""))
    images = _images(row)
    messages = "".join(_message(j, message, images.get(j, [])) for j, message in enumerate(row.get("messages") or []))
    return (
        f'<details class="rollout {"scored" if reward is not None else "unscored"}" id="rollout-{i}">'
        f'<summary>{summary}</summary><table class="facts">{meta}</table>{messages}</details>'
    )


def _images(row: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
    """The row's kept images by message index (`media`, JSON text); a row without them has none."""
    try:
        media = json.loads(row.get("media") or "[]")
    except (TypeError, ValueError):
        return {}
    by_message: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for item in media if isinstance(media, list) else ():
        if isinstance(item, dict) and isinstance(item.get("message"), int):
            by_message[item["message"]].append(item)
    return by_message


def _message(j: int, message: dict[str, Any], images: list[dict[str, Any]]) -> str:
    role = str(message.get("role", ""))
    kind = role if role in ("system", "user", "assistant", "tool") else "other"
    label = _e(role) + (f" · {_e(message.get('name'))}" if message.get("name") else "")
    parts = [f'<div class="message {kind}"><div class="role">{label}</div>']
    if message.get("content"):
        parts.append(f"<pre>{_e(str(message['content']))}</pre>")
    for call in message.get("tool_calls") or ():
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        parts.append(
            f'<div class="call">→ <b>{_e(str(function.get("name", "")))}</b>'
            f"<pre>{_e(str(function.get('arguments', '')))}</pre></div>"
        )
    parts.extend(_image(item) for item in images)
    parts.append("</div>")
    return "".join(parts)


def _image(item: dict[str, Any]) -> str:
    url = item.get("url")
    if isinstance(url, str) and _IMAGE_URL.fullmatch(url):
        return f'<img class="shot" alt="image {_e(item.get("part"))}" src="{url}">'
    return f'<p class="hint">[image not kept: {_e(item.get("omitted") or "not a data URL")}]</p>'


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}
<script>{script}</script>
</body>
</html>
"""

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .2em .6em; text-align: left; vertical-align: top; }
table.summary td, table.tasks td { font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; background: #f3f3f3; }
table.sortable th.asc::after { content: " ▲"; } table.sortable th.desc::after { content: " ▼"; }
.hint { color: #777; font-size: 90%; }
.histograms { display: flex; flex-wrap: wrap; gap: 1.5em; }
svg.histogram rect { fill: #4a78c2; } svg.histogram text { font-size: 10px; fill: #555; }
details.rollout { border: 1px solid #ddd; border-radius: 4px; margin: .3em 0; padding: .2em .6em; }
details.rollout.unscored > summary { color: #a33; }
details.rollout > summary { cursor: pointer; }
.message { border-left: 3px solid #ccc; margin: .4em 0; padding: .1em .6em; }
.message.user { border-color: #6a6; } .message.assistant { border-color: #46c; } .message.tool { border-color: #c84; }
.role { font-weight: bold; font-size: 90%; color: #555; }
pre { white-space: pre-wrap; word-break: break-word; margin: .2em 0; }
img.shot { max-width: 320px; border: 1px solid #ccc; image-rendering: pixelated; }
"""

# Sorts a `table.sortable` by the clicked column, by each cell's `data-v` (numbers as numbers).
_SCRIPT = """
"use strict";
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var ascending = !th.classList.contains("asc");
      table.querySelectorAll("thead th").forEach(function (h) { h.classList.remove("asc", "desc"); });
      th.classList.add(ascending ? "asc" : "desc");
      var numeric = th.dataset.type === "number";
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.v, y = b.cells[column].dataset.v;
        var order = numeric ? (x === "" ? -1e308 : Number(x)) - (y === "" ? -1e308 : Number(y))
                            : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""
