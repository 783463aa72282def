"""Names for untrusted wire names: valid, predictable, never colliding."""

import keyword

import pytest
from orlgen.names import ClassName, PythonIdentifier, class_name, identifier, slug


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        ("echo", "echo"),
        ("submit-solution", "submit_solution"),
        ("getHTTPStatus", "get_http_status"),
        ("class", "class_"),
        ("from", "from_"),
        ("match", "match_"),  # soft keyword
        ("_private", "private"),
        ("3d", "n3d"),
        ("ﬁle", "file"),  # NFKD folds the ligature
        ("", "unnamed"),
        ("名前", "unnamed"),
    ],
)
def test_identifier_mangling(wire, expected):
    assert identifier(wire) == expected


def test_identifier_avoids_taken_names_in_order():
    assert identifier("reset", taken={"reset"}) == "reset_"
    assert identifier("reset", taken={"reset", "reset_"}) == "reset_2"
    assert identifier("a-b", taken={"a_b"}) == "a_b_"


def test_validated_types_reject_unusable_names():
    for bad in ["class", "_x", "a-b", "1a", "", "é", "match"]:
        with pytest.raises(ValueError):
            PythonIdentifier(bad)
    for bad in ["lower", "A-B", ""]:
        with pytest.raises(ValueError):
            ClassName(bad)


def test_python_identifier_is_lower_case_as_promised():
    # A module name `Foo` would be `Foo.py` beside a `foo.py` on a case-insensitive file system.
    for bad in ["Foo", "fooBar", "FOO"]:
        with pytest.raises(ValueError, match="not lower-case"):
            PythonIdentifier(bad)
    assert PythonIdentifier("foo_2") == "foo_2"


def test_class_names():
    assert class_name("submit-solution", suffix="Params") == "SubmitSolutionParams"
    assert class_name("echo", suffix="Params", taken={"EchoParams"}) == "Echo2Params"
    assert slug("Eigent/SETA") == "eigent_seta"


def test_every_keyword_gets_a_usable_name():
    for word in keyword.kwlist + keyword.softkwlist:
        name = identifier(word)
        assert name.isidentifier() and not keyword.iskeyword(name) and not keyword.issoftkeyword(name)
