"""docs/benchmarks.md's command CPU table is what `python -m bench.commands` printed: the
checked-in result files rendered again give the page's table byte for byte."""

from __future__ import annotations

import json

from bench.commands import DOCS, docs_section
from tests.support.modules import REPO

BEFORE = REPO / "bench" / "commands-92265e0.json"


def test_the_docs_table_is_rendered_from_the_checked_in_results():
    (after,) = [path for path in sorted((REPO / "bench").glob("commands-*.json")) if path != BEFORE]
    text = DOCS.read_text(encoding="utf-8")
    before_rows, after_rows = (json.loads(path.read_text(encoding="utf-8")) for path in (BEFORE, after))
    assert docs_section(text, before_rows, after_rows) == text
    assert f"bench/commands-{after_rows['commit']}.json" in text  # the page names the file it shows
