"""Bad options and unwritable output directories: one `orlgen: error:` line, exit 2, nothing written."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.cli import invoke, orlgen_script
from tests.support.modules import REPO


def test_negative_probes_are_refused_before_any_capture(tmp_path):
    result = invoke("snapshot", "examples.nowhere:Nope", "--probes", "-1", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "Invalid value for '--probes': -1 is not in the range x>=0" in result.output
    assert "cannot import" not in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_an_out_below_a_file_is_one_line_without_errno(tmp_path):
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "generated"
    result = invoke("snapshot", "examples.echo:Echo", "--out", str(out))
    assert result.exit_code == 2
    assert result.output == f"orlgen: error: {out}: Not a directory\n"


def _read_only_mounts() -> bool:
    """Whether this machine lets an unprivileged user namespace mount a read-only tmpfs."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o ro none /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _read_only_mounts(), reason="needs `unshare -rm` and a tmpfs mount (user namespaces)")
def test_a_read_only_out_is_one_line_without_errno(tmp_path):
    """A real read-only file system (a tmpfs mounted `ro` in a private mount namespace)."""
    out = tmp_path / "ro"
    out.mkdir()
    script = f'mount -t tmpfs -o ro none "{out}" && exec "{orlgen_script()}" snapshot examples.echo:Echo --out "{out}"'
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"orlgen: error: {out}/") and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.endswith(": Read-only file system\n") and "Errno" not in result.stderr


def test_an_error_of_no_words_or_many_lines_is_named_in_one_line():
    """The one-line idiom (`first_line`, `described`) takes an exception with no message, which
    `str(exc).splitlines()[0]` raised on (IndexError) in its 18 copies; a server found dead with an
    empty reason opened its breaker with an IndexError."""
    from orlgen.runtime.errors import described, first_line
    from orlgen.runtime.session.breaker import Breaker

    assert (first_line(""), first_line("\n"), first_line("a\nb")) == ("", "", "a")
    assert (described(ValueError()), described(OSError("x\ny"))) == ("ValueError: ", "OSError: x")
    gate = Breaker(failures=3, cooldown=30.0)
    gate.trip("")
    assert gate.dead == "no reason given" and gate.opened_at is not None
