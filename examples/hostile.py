"""A hostile environment: every name, description and schema shape that has broken a binder.

Each tool answers with the exact arguments that reached it (wire names, JSON values), so tests
can check what the generated adapter sent. None of it is malicious to run: the "injection" text
would create `orlgen-canary.txt` in the working directory if any of it were ever executed.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel, ConfigDict, Field

CANARY = "orlgen-canary.txt"
INJECTION = (
    'Ignore this. """ + __import__("pathlib").Path("' + CANARY + '").write_text("pwned") + """ '
    "{{ ''.__class__ }} {% raw %} \\x00 \\ end\\"
)


def _echo(params: BaseModel | None) -> ToolOutput:
    sent = {} if params is None else params.model_dump(mode="json", by_alias=True, include=params.model_fields_set)
    return ToolOutput(blocks=[TextBlock(text=json.dumps(sent, sort_keys=True))])


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    source: str = Field(alias="from", description="Where from: a keyword as a parameter name.")
    self_: int = Field(0, alias="self", description="A parameter named self.")
    file_path: str | None = Field(None, alias="file-path", description="A name with a dash.")


class Node(BaseModel):
    """A recursive tree."""

    label: str
    children: list[Node] = Field(default_factory=list)


class Circle(BaseModel):
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class Square(BaseModel):
    kind: Literal["square"]
    side: float = Field(gt=0)


class Shapes(BaseModel):
    priority: Literal[1, 2, 3] = Field(description="An int enum.")
    version: Literal["v1"] = Field(description="A const.")
    shape: Annotated[Circle | Square, Field(discriminator="kind")] = Field(description="A discriminated union.")
    point: tuple[int, int] | None = Field(None, description="An optional pair.")
    tree: Node | None = Field(None, description="A recursive model.")


class Described(BaseModel):
    text: str = Field(
        description="Quotes \"\"\" and ''' and a backslash \\ at the end\\",
    )
    mode: str = Field("a", description="Pick one (choices: a, b, or c)")


class Hostile(Environment):
    """Names, descriptions and schemas from a stranger."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"id": i, "prompt": f"task {i}", "environment": "hostile"} for i in range(4)]

    def get_prompt(self):
        return [TextBlock(text=f"Hostile task {self.task_spec['id']}.")]

    @tool
    def reset(self, params: Aliased) -> ToolOutput:
        """Collides with the adapter's reset. Args: is mentioned mid-line, Returns: too."""
        return _echo(params)

    @tool
    def reward(self, params: Shapes) -> ToolOutput:
        """Collides with the adapter's state attribute.

        Args:
            priority: an Args block written by the env author.
            shape: more of it.

        Returns:
            nothing useful.
        """
        return _echo(params)

    @tool
    def get_reward(self, params: Described) -> ToolOutput:
        """Collides with TRL's special method (choices: [not, json)"""
        return _echo(params)

    @tool
    def _private(self) -> ToolOutput:
        return _echo(None)

    @tool(shared=False)
    def draft4(self) -> ToolOutput:
        """Task-only, with a hand-written draft-04 schema (see list_task_tools)."""
        return _echo(None)

    def list_task_tools(self) -> ListToolsOutput:
        if self.task_spec["id"] % 2:
            return ListToolsOutput(tools=[])
        return ListToolsOutput(tools=[ToolSpec(name="draft4", description=INJECTION, input_schema=DRAFT4)])


def _class_tool(self: Hostile) -> ToolOutput:
    """A keyword as a tool name."""
    return _echo(None)


def _submit(self: Hostile, params: Described) -> ToolOutput:
    """A dash in the tool name. Ends the episode with reward 1."""
    out = _echo(params)
    return out.model_copy(update={"reward": 1.0, "finished": True})


_submit.__annotations__ = {"params": Described, "return": ToolOutput}
setattr(Hostile, "class", tool(_class_tool))
setattr(Hostile, "submit-solution", tool(_submit))

# A draft-04 style schema, as hand-written servers send it: type lists, boolean sub-schemas,
# `definitions`, and the code-injection text in descriptions.
DRAFT4: dict[str, Any] = {
    "type": "object",
    "definitions": {
        "limits": {"type": "object", "properties": {"low": {"type": "integer"}}, "additionalProperties": False}
    },
    "properties": {
        "value": {"type": ["string", "integer", "null"], "description": INJECTION},
        "anything": True,
        "limits": {"$ref": "#/definitions/limits"},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["value"],
}
