"""`orlgen vet`: the tool surface the model reads, linted from the snapshot (issue 30 item 11)."""

from __future__ import annotations

from orlgen.review.files import write_files
from orlgen.review.vet import VetRules, vet
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import REPO
from tests.test_diff import edited

ECHO = REPO / "generated" / "echo.snapshot.json"
HELPDESK = REPO / "generated" / "helpdesk.snapshot.json"


def project(tmp_path, vet_table: str = ""):
    (tmp_path / "pyproject.toml").write_text(f'[tool.orlgen]\nout = "gen"\n{vet_table}', encoding="utf-8")
    (tmp_path / "gen").mkdir()
    return tmp_path / "gen"


def saved(out, snapshot, name):
    path = out / f"{name}.snapshot.json"
    write_files(snapshot.model_copy(update={"name": name}).canonical().files(path))
    return path


def rules_of(findings):
    return {(finding.rule, finding.subject) for finding in findings}


def test_an_undescribed_parameter_is_named_and_a_documented_one_is_not():
    findings = vet(load(ECHO))
    assert ("PARAM_UNDESCRIBED", "echo.text") in rules_of(findings)  # the module shows it as "Text."
    helpdesk = rules_of(vet(load(HELPDESK)))
    assert not any(rule == "PARAM_UNDESCRIBED" for rule, _ in helpdesk)  # described in schema or Args:


def test_look_alike_names_and_repeated_descriptions(tmp_path):
    def edit(data):
        first = data["tools"][0]
        twin = {**first, "name": "lоok_up"}  # Cyrillic o: reads as `look_up`
        plain = {**first, "name": "look_up"}
        echo = {**first, "name": "echo_again", "description": first["description"] + "!"}
        data["tools"] += [twin, plain, echo]

    findings = vet(edited(load(ECHO), edit))
    found = rules_of(findings)
    assert ("NAME_LOOKALIKE", "lоok_up") in found
    assert ("DESCRIPTION_REPEATED", "echo, echo_again") in found
    severity = {finding.rule: finding.severity for finding in findings}
    assert severity["NAME_LOOKALIKE"] == "error" and severity["DESCRIPTION_REPEATED"] == "warning"


def test_the_project_decides_what_fails(tmp_path):
    out = project(tmp_path, '[tool.orlgen.vet]\nerror = ["PARAM_UNDESCRIBED"]\nignore = ["TOOL_BLOCK_SIZE"]\n')
    path = saved(out, load(ECHO), "echo")
    result = invoke("vet", path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "PARAM_UNDESCRIBED    error   echo: echo.text: no description in its schema or the tool's docstring"
    ]
    assert result.stderr.strip() == "1 error(s), 0 warning(s)"


def test_by_default_vet_reports_every_snapshot_in_out_and_passes_on_warnings(tmp_path, monkeypatch):
    out = project(tmp_path)
    saved(out, load(ECHO), "echo")
    saved(out, load(HELPDESK), "helpdesk")
    monkeypatch.chdir(tmp_path)
    result = invoke("vet")
    assert result.exit_code == 0, result.output
    envs = {line.split()[2].rstrip(":") for line in result.stdout.splitlines()}
    assert envs == {"echo", "helpdesk"}
    assert "TOOL_BLOCK_SIZE      info    helpdesk: tools: " in result.stdout


def test_unknown_vet_rules_are_refused_in_one_line(tmp_path):
    out = project(tmp_path, '[tool.orlgen.vet]\nerror = ["PARAM_UNDESCRIBE"]\n')
    result = invoke("vet", saved(out, load(ECHO), "echo"))
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "unknown vet rule 'PARAM_UNDESCRIBE'" in result.stderr and "TOOL_BLOCK_SIZE" in result.stderr


def test_tool_block_in_tokens_with_a_local_tokenizer(tmp_path, tiny_model_path):
    out = project(tmp_path)
    result = invoke("vet", saved(out, load(ECHO), "echo"), "--tokenizer", tiny_model_path)
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if line.startswith("TOOL_BLOCK_SIZE"))
    characters, tokens = (int(word.replace(",", "")) for word in line.split(": tools: ")[1].split()[::2][:2])
    assert 0 < tokens < characters


def test_a_directory_that_is_no_tokenizer_is_one_line(tmp_path):
    out = project(tmp_path)
    result = invoke("vet", saved(out, load(ECHO), "echo"), "--tokenizer", tmp_path)
    assert result.exit_code == 2 and "not a tokenizer directory" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_rules_object_validates():
    assert VetRules.of(ignore=["TOOL_BLOCK_SIZE"]).severity("TOOL_BLOCK_SIZE") is None
    assert VetRules.of(error=["DESCRIPTION_REPEATED"]).severity("DESCRIPTION_REPEATED") == "error"
