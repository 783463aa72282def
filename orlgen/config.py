"""`[tool.orlgen]` in pyproject.toml → a validated Config. Unknown keys are errors, not ignored.

```toml
[tool.orlgen]
out = "generated"            # where snapshots and modules live
templates = "orlgen/templates"  # optional: templates that override the packaged ones

[[tool.orlgen.envs]]
target = "examples.helpdesk:Helpdesk"   # catalog name, URL or module:EnvClass
name = "helpdesk"            # optional module name
env = "helpdesk"             # optional: the env key on a multi-environment server
splits = ["train", "test"]   # optional: default all
tasks = "all"                # optional: "all", "none" or a sample size
probes = 3                   # optional: sessions per split to find task-only tools

[[tool.orlgen.mixtures]]
name = "support_mix"         # generated/support_mix.py: several envs for one trainer
envs = ["echo", "helpdesk"]  # module names of snapshots in `out`
```
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .capture import CaptureOptions
from .errors import OrlgenError


class ConfigFileError(OrlgenError, ValueError):
    """pyproject.toml's `[tool.orlgen]` table is not valid."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvConfig(_Strict):
    target: str
    name: str | None = None
    env: str | None = None
    splits: tuple[str, ...] = ()
    tasks: Literal["all", "none"] | int | None = None
    probes: int = Field(3, ge=0)

    def capture_options(self) -> CaptureOptions:
        return CaptureOptions(env=self.env, name=self.name, splits=self.splits, tasks=self.tasks, probes=self.probes)


class MixtureConfig(_Strict):
    name: str  # the mixture module's name
    envs: tuple[str, ...] = Field(min_length=2)  # module names of snapshots in `out`


class Config(_Strict):
    out: Path = Path("generated")
    templates: Path | None = None
    envs: tuple[EnvConfig, ...] = ()
    mixtures: tuple[MixtureConfig, ...] = ()


def mixture_members(config: Config) -> dict[str, tuple[str, ...]]:
    return {mixture.name: mixture.envs for mixture in config.mixtures}


def load_config(project: Path = Path(".")) -> Config:
    """The config of the project in `project` (defaults when there is no `[tool.orlgen]`).

    Relative paths are taken relative to the project directory.
    """
    path = project / "pyproject.toml"
    if not path.exists():
        return Config(out=project / "generated")
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("orlgen", {})
        config = Config.model_validate(table)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigFileError(f"{path}: [tool.orlgen] {where}: {first['msg']}") from exc
    return config.model_copy(
        update={
            "out": project / config.out,
            "templates": None if config.templates is None else project / config.templates,
        }
    )
