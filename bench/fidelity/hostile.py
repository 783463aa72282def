"""Hand-built hostile schemas (pydantic v2, as an ORS server would emit them)."""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, conint

from bench.fidelity.sets import Group, ToolSchema


class _Transfer(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    source: str = Field(alias="from", description="Account to move the money from.")
    to: str = Field(description="Account to move the money to.")
    amount: float = Field(gt=0, le=10_000, description="How much to move.")


class _Receipt(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    file_path: str | None = Field(
        None, alias="file-path", pattern=r"^/tmp/.+$", description="Where to write the receipt."
    )
    self_: int = Field(0, alias="self", ge=0, description="A parameter named self.")


class _Priority(IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3


class _Node(BaseModel):
    """A recursive tree."""

    label: str
    children: list[_Node] = Field(default_factory=list)


class _Circle(BaseModel):
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class _Square(BaseModel):
    kind: Literal["square"]
    side: float = Field(gt=0)


class _Shapes(BaseModel):
    priority: _Priority = Field(description="An int enum, by $ref.")
    version: Literal["v1"] = Field(description="A const.")
    shape: Annotated[_Circle | _Square, Field(discriminator="kind")] = Field(description="A discriminated union.")
    point: tuple[int, int] | None = Field(None, description="An optional pair.")
    tree: _Node | None = Field(None, description="A recursive model.")


class _Answer(BaseModel):
    answer: str = Field(min_length=1, max_length=200, description="The final answer.")


class _Submit(_Answer):
    tags: list[Literal["math", "code", "prose"]] = Field(
        default_factory=list, max_length=3, description="Labels for the answer."
    )
    weights: dict[str, float] = Field(default_factory=dict, description="Per-criterion weights.")
    retries: conint(ge=0, le=5) | None = Field(3, description="Retry budget.")
    level: Literal[1, 2, 3] = Field(2, description="A literal int enum with a default.")


class _ShapeRef(BaseModel):
    shape_id: str = Field(description="Which shape.")


class _Search(BaseModel):
    query: str = Field(description="What to look for.")
    mode: str = Field("fast", description="How to search.\nNote: exhaustive mode is slow.\nArgs: are checked.")
    format: Literal["json", "text"] = Field("json", description="Output format.")
    pattern: str | None = Field(None, description="Optional glob filter.")


class _Lookup(BaseModel):
    key: str = Field(description="What to look up (choices: not json)")


def hostile_groups() -> list[Group]:
    """Each tool carries one trait that has broken a binder; the rich schemas (`draw`, `submit`,
    `search`) sit under plain names so that TRL's handling of them is measured too."""

    def t(name: str, description: str, model: type[BaseModel]) -> ToolSchema:
        return ToolSchema(name, description, model.model_json_schema())

    tools = [
        t("transfer", "Move money. A parameter is named `from` (a keyword).", _Transfer),
        t("save_receipt", "Save a receipt. Parameters `file-path` (no identifier) and `self`.", _Receipt),
        t("class", "Delete a shape. The tool name is a Python keyword.", _ShapeRef),
        t("draw", "Draw a shape: int enum, const, discriminated union, tuple | None, recursive model.", _Shapes),
        t("submit-solution", "Submit the final answer. The tool name is no identifier.", _Answer),
        t("submit", "Submit with metadata: enum items, a map, a constrained optional, an int Literal.", _Submit),
        t(
            "search",
            "Search the index. Args: are validated by the server, Returns: a list.\n\n"
            "Returns:\n    The hits, best first (choices: not json)",
            _Search,
        ),
        t("lookup", "Look a key up. Its parameter description ends in a `(choices: ...)` that is no JSON.", _Lookup),
    ]
    return [Group("hostile", "hostile", tools)]
