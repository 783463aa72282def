"""A fresh venv with the example trainer plugin (examples/orlgen-echo-trainer) installed, built
once and cached under ~/.cache/orlgen-test-venvs like the trainers' venvs
(`tests/support/framework_venvs.py`).

Nothing is downloaded: the venv is made without pip, and a path configuration file puts this
venv's site-packages (orlgen's editable install, its toolchain, pip and setuptools) on its path;
the plugin is then installed by pip, offline and without build isolation, into the new venv's
own site-packages, where `importlib.metadata` finds its entry point as it would a user's. The
cache key is the plugin's files, this file and the interpreter; a venv is used once its `ready` mark is
written, and one build at a time holds a lock beside it.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.support.modules import REPO

CACHE = Path.home() / ".cache" / "orlgen-test-venvs"
PLUGIN = REPO / "examples" / "orlgen-echo-trainer"


def echo_plugin_bin() -> Path:
    """The bin directory of a venv where orlgen (its `orlgen` command too) and the `echo` trainer
    plugin are installed."""
    site = Path(sysconfig.get_paths()["purelib"])  # this venv's, which the new one reads
    digest = hashlib.sha256(f"{sys.version}\n{site}\n".encode() + Path(__file__).read_bytes())  # how it is built
    for path in sorted(p for p in PLUGIN.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(PLUGIN)}\n".encode() + path.read_bytes())
    home = CACHE / f"echo-plugin-{digest.hexdigest()[:16]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (home / "ready").exists():
            shutil.rmtree(home, ignore_errors=True)
            _build(home, site)
            (home / "ready").write_text(f"{site}\n")
    return home / "bin"


def _build(home: Path, site: Path) -> None:
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(home)], check=True)  # type: ignore[attr-defined]
    python = home / "bin" / "python"
    own = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # `site.addsitedir` also runs that directory's own .pth files (orlgen's editable install)
    (Path(own) / "orlgen_dev_venv.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
    # orlgen's command, as pip writes a console script (orlgen itself is this venv's install)
    script = home / "bin" / "orlgen"
    script.write_text(
        f"#!{python}\nimport sys\nfrom orlgen.entry import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
    )
    script.chmod(0o755)
    source = home / "src"  # setuptools builds in the source tree: a copy, not the example's folder
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", str(source)],
        check=True,
        capture_output=True,
    )
