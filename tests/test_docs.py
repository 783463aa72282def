"""Docs that cannot drift: measured figures live in docs/benchmarks.md only (each next to the
command that reproduces it), every config key is documented, and the pre-commit snippet works
with this repository as it is."""

from __future__ import annotations

import re

import yaml
from orlgen.config import Config, EnvConfig, MixtureConfig

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
    keys = set(Config.model_fields) | set(EnvConfig.model_fields) | set(MixtureConfig.model_fields)
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
