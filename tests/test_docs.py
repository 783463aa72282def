"""Docs that cannot drift: measured figures live in docs/benchmarks.md only (each next to the
command that reproduces it), every config key is documented, and the pre-commit snippet works
with this repository as it is."""

from __future__ import annotations

import re

import yaml
from orlgen.config import Config, DiffConfig, EnvConfig, MixtureConfig, VetConfig

from tests.support.modules import REPO

# A duration, a speed-up, or a share ("430 of 1,405"): what a measurement says.
FIGURE = re.compile(r"\b\d[\d,]*(\.\d+)? ?(ms|s|×|minutes?)(?![\w-])|\b\d[\d,]* of (the )?\d[\d,]*\b")
PAGES = ["README.md", "docs/training.md", "docs/migration.md", "docs/design.md", "docs/capture.md"]


def test_measured_figures_appear_only_on_the_benchmarks_page():
    found = [
        f"{page}:{number}: {line.strip()}"
        for page in PAGES
        for number, line in enumerate((REPO / page).read_text(encoding="utf-8").splitlines(), 1)
        if FIGURE.search(line) and "ORLGEN_" not in line  # a documented default is no measurement
    ]
    assert found == [], "\n".join(found)


def test_every_config_key_is_documented_in_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(\[tool\.orlgen\].*?)```", readme, re.S)
    assert block
    documented = set(re.findall(r"^(\w+) =", block.group(1), re.M))
    documented |= set(re.findall(r"^\[tool\.orlgen\.(\w+)\]", block.group(1), re.M))  # tables: diff, vet
    keys = set(Config.model_fields) | set(EnvConfig.model_fields) | set(MixtureConfig.model_fields)
    keys |= set(DiffConfig.model_fields) | set(VetConfig.model_fields)
    assert keys - {"envs", "mixtures"} <= documented, sorted(keys - documented)


def test_the_pre_commit_snippet_runs_orlgen_check_without_a_release_tag():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    snippet = next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if ".pre-commit-config.yaml" in b)
    (repo,) = yaml.safe_load(snippet)["repos"]
    assert repo["repo"] == "local" and "rev" not in repo
    (hook,) = repo["hooks"]
    shipped = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == shipped[0]["id"] and hook["entry"] == shipped[0]["entry"] == "orlgen check"
    assert hook["language"] == "system" and hook["pass_filenames"] is False
    assert re.search(hook["files"], "generated/echo.snapshot.json")


def _design_rows(heading: str) -> list[str]:
    """The table rows of docs/design.md's section under `heading`."""
    section = (REPO / "docs" / "design.md").read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def _named(rows: list[str]) -> set[str]:
    """Every path a row's first cell names; a bare `x.py` after `dir/x.py` in the same cell is in dir."""
    named = set()
    for row in rows:
        folder = ""
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", row.split(" | ")[0]):
            if "/" in name.rstrip("/"):
                folder = name.rsplit("/", 1)[0] + "/"
            elif not name.endswith("/"):
                name = folder + name
            named.add(name)
    return named


def test_the_module_table_matches_the_tree():
    """docs/design.md's module table names every module of orlgen (a package row, `eval/`, covers
    its files) and nothing that is gone."""
    named = _named(_design_rows("Modules"))
    packages = {name for name in named if name.endswith("/") and name != "runtime/"}
    source = REPO / "orlgen"
    modules = {
        path.relative_to(source).as_posix()
        for path in source.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    }
    unnamed = {m for m in modules if m not in named and not any(m.startswith(p) for p in packages)}
    assert unnamed == set(), f"modules docs/design.md's table does not name: {sorted(unnamed)}"
    gone = {name for name in named if not (source / name).exists()}
    assert gone == set(), f"docs/design.md's table names modules that do not exist: {sorted(gone)}"
