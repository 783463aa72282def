"""Issues 39 and 43, area `names`: the diff rule set a project pins (`[tool.orlgen.diff] rules`),
the public names of each generator package (`__all__`), and a re-capture that switches the
snapshot's target saying so."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest
from orlgen.review import diff as review_diff

from tests.support.cli import invoke
from tests.test_diff_review import grown, project

REPO = Path(__file__).resolve().parent.parent
GENERATOR_PACKAGES = ("capture", "plan", "render", "review", "snapshot", "trainers", "eval")


# ---------------------------------------------------------------------------------------------
# 1. the diff rule set, pinned
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pin", "shown"), [('"7"', "'7'"), ("1", "1")])
def test_an_unknown_rule_set_is_one_config_line_naming_the_known_sets(tmp_path, pin, shown):
    project(tmp_path, f"[tool.orlgen.diff]\nrules = {pin}\n")
    old, new = grown(tmp_path)
    result = invoke("diff", old, "--against", new)
    assert result.exit_code == 2
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "[tool.orlgen] diff.rules: unknown rule set " + shown in result.stderr
    assert 'the known sets are "1"' in result.stderr


@pytest.fixture
def second_set(monkeypatch):
    """A rule set "2" defined here (only set "1" exists yet), as a later release would add it:
    by listing only what changes. TOOL_ADDED becomes a breaking CALL change."""
    sets = {**review_diff.RULE_SET_CHANGES, "2": {"TOOL_ADDED": ("CALL", True)}}
    monkeypatch.setattr(review_diff, "RULE_SET_CHANGES", sets)


@pytest.mark.parametrize(
    ("table", "classed", "exit_code"),
    [
        ('[tool.orlgen.diff]\nrules = "1"\n', ("PROMPT", False), 0),  # pinned: CI stays green
        ('[tool.orlgen.diff]\nrules = "2"\n', ("CALL", True), 1),
        ("", ("CALL", True), 1),  # unpinned: the latest set
    ],
)
def test_diff_applies_the_pinned_rule_set(tmp_path, second_set, table, classed, exit_code):
    project(tmp_path, table)
    old, new = grown(tmp_path)
    result = invoke("diff", old, "--against", new, "--format", "json")
    assert result.exit_code == exit_code, result.output
    changes = {c["rule"]: (c["category"], c["breaking"]) for c in json.loads(result.stdout)["changes"]}
    assert changes == {"TOOL_ADDED": classed, "TASK_COUNT_CHANGED": ("DATA", False)}


def _diff_under_set_1_lacking_tool_added(tmp_path, monkeypatch, later: tuple[str, bool], extra: str):
    """`orlgen diff` of a grown snapshot in a project pinned to rule set "1", where set "1" lacks
    TOOL_ADDED and set "2" introduces it classed as `later`; `extra` adds to `[tool.orlgen.diff]`."""
    first = {rule: classed for rule, classed in review_diff.RULES.items() if rule != "TOOL_ADDED"}
    monkeypatch.setattr(review_diff, "RULE_SET_CHANGES", {"1": first, "2": {"TOOL_ADDED": later}})
    project(tmp_path, f'[tool.orlgen.diff]\nrules = "1"\n{extra}')
    old, new = grown(tmp_path)
    return invoke("diff", old, "--against", new, "--format", "json")


def test_a_rule_the_pinned_set_does_not_know_is_reported_never_breaking(tmp_path, monkeypatch):
    """TOOL_ADDED stands in for a rule a later set introduces: set "1" here lacks it."""
    result = _diff_under_set_1_lacking_tool_added(tmp_path, monkeypatch, ("CALL", True), "")
    assert result.exit_code == 0, result.output
    changes = {c["rule"]: (c["category"], c["breaking"]) for c in json.loads(result.stdout)["changes"]}
    assert changes["TOOL_ADDED"] == ("CALL", False)  # seen, classed as set "2" does, not breaking


def test_a_trust_rule_the_pinned_set_does_not_know_is_breaking_all_the_same(monkeypatch):
    """SECRETS_REDIRECTED stands in for a TRUST rule a later set introduces: where the adapter
    sends secrets is reviewed whatever set a project pinned, as no project can ignore it."""
    later = {"SECRETS_REDIRECTED": ("TRUST", True), "TOOL_RENAMED": ("CALL", True)}
    monkeypatch.setattr(review_diff, "RULE_SET_CHANGES", {**review_diff.RULE_SET_CHANGES, "2": later})
    pinned = review_diff.Rules.of(rule_set="1")
    found = pinned.applied([review_diff.Change(rule, "x", "found") for rule in later])
    assert [(c.rule, c.category, c.breaking) for c in found] == [
        ("SECRETS_REDIRECTED", "TRUST", True),
        ("TOOL_RENAMED", "CALL", False),
    ]


def test_a_rule_the_pinned_set_does_not_know_can_still_be_promoted(tmp_path, monkeypatch):
    """A project that names a later rule in `breaking` asked for it: the pin does not undo that."""
    result = _diff_under_set_1_lacking_tool_added(
        tmp_path, monkeypatch, ("PROMPT", False), 'breaking = ["TOOL_ADDED"]\n'
    )
    assert result.exit_code == 1, result.output


# ---------------------------------------------------------------------------------------------
# 2. each generator package's public names
# ---------------------------------------------------------------------------------------------


def _imported_from_outside(package: str) -> dict[str, list[str]]:
    """Each name another part of orlgen imports from `orlgen.<package>` (a module of it, or a
    name its `__init__` defines), with the files that import it."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "orlgen").rglob("*.py")):
        inside = path.relative_to(REPO / "orlgen").parts
        if len(inside) > 1 and inside[0] == package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for name in _names(node, f"orlgen.{package}"):
                found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


def _names(node: ast.AST, package: str) -> list[str]:
    """What `node` imports from `package`: `from package.mod import x` and `import package.mod`
    name `mod`; `from package import a, b` names `a` and `b`."""
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
        if node.module == package:
            return [alias.name for alias in node.names]
        if node.module.startswith(package + "."):
            return [node.module.split(".")[2]]
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[2] for alias in node.names if alias.name.startswith(package + ".")]
    return []


@pytest.mark.parametrize("package", GENERATOR_PACKAGES)
def test_other_packages_import_only_a_generator_packages_public_names(package):
    module = importlib.import_module(f"orlgen.{package}")
    public = getattr(module, "__all__", None)
    assert public is not None, f"orlgen.{package} states no __all__"
    outside = {name: files for name, files in _imported_from_outside(package).items() if name not in public}
    assert not outside, f"orlgen.{package}: imported from outside but not in its __all__: {outside}"
    for name in public:  # each public name is one of its modules or a name its __init__ defines
        assert hasattr(module, name) or importlib.util.find_spec(f"orlgen.{package}.{name}") is not None, name


# ---------------------------------------------------------------------------------------------
# 3. a re-capture that switches the snapshot's target
# ---------------------------------------------------------------------------------------------

MODULE = "examples.echo:Echo"


def _capture(target: str, out: Path) -> str:
    result = invoke("snapshot", target, "--out", out, "--no-generate", "--probes", "0")
    assert result.exit_code == 0, result.output
    return result.stderr


def _switched(before: str, after: str) -> str:
    return (
        f"orlgen: warning: echo: the snapshot's target changes from {before} to {after}; "
        "the adapter now connects there\n"
    )


@pytest.mark.slow
def test_recapturing_by_another_target_form_says_so_once(tmp_path, echo_url):
    out = tmp_path / "generated"
    with_credentials = echo_url.replace("http://", "http://alice:hunter22@")
    url = f"url {echo_url}"

    assert "target changes" not in _capture(with_credentials, out)  # the first capture: nothing to switch from
    said = _capture(MODULE, out)
    assert said.count(_switched(url, f"module {MODULE}")) == 1, said
    assert said.count("target changes") == 1 and "hunter22" not in said and "alice" not in said
    assert "target changes" not in _capture(MODULE, out)  # the same target again: nothing to say
    said = _capture(with_credentials, out)
    assert said.count(_switched(f"module {MODULE}", url)) == 1, said  # and the other way round
    assert "hunter22" not in said and "alice" not in said
