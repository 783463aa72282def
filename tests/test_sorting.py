"""`orlgen.plan.sorting.dunder_all_order` agrees with ruff's RUF022, the pinned ruff itself being the judge."""

from __future__ import annotations

import random
import subprocess
import sys

from orlgen.plan.sorting import dunder_all_order


def names(rng: random.Random, count: int) -> list[str]:
    """Identifiers mixing the cases ruff groups by and the digit runs it sorts by value."""
    parts = ["get", "v", "V", "Rates", "RATES", "x", "X", "a_", "_", "é", "É", "ß", "Ω"]
    digits = ["0", "00", "01", "1", "2", "9", "10", "010", "100"]
    out = set()
    while len(out) < count:
        pieces = [rng.choice(parts) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.7:
            pieces.insert(rng.randint(1, len(pieces)), rng.choice(digits))
        out.add("".join(pieces))
    return sorted(out)  # a deterministic start, shuffled below


def test_the_order_ruff_wants(tmp_path):
    rng = random.Random(0)
    shuffled = names(rng, 300)
    rng.shuffle(shuffled)
    ordered = dunder_all_order(["get_v10_rates", "get_v2_rates", "A", "TOOLS", "EchoEnv", *shuffled])
    assert ordered.index("get_v2_rates") < ordered.index("get_v10_rates")
    path = tmp_path / "exports.py"
    path.write_text("__all__ = [\n" + "".join(f"    {name!r},\n" for name in ordered) + "]\n", encoding="utf-8")
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "RUF022", str(path)]
    result = subprocess.run(ruff, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
