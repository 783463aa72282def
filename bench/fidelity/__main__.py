"""Schema fidelity: how many facts of a tool's input JSON Schema reach the model.

`python -m bench.fidelity [--json PATH]` prints the report (`bench.fidelity.report`), and writes the
numbers as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from bench.common import write_json
from bench.fidelity.measure import measure
from bench.fidelity.report import report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    result = measure()
    print(report(result))
    print(f"\nmeasured in {result.seconds:.1f} s")
    if args.json:
        write_json(args.json, result.to_json(), sort_keys=True, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
