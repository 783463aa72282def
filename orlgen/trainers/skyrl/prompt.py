"""The skyrl module's system prompt: the tools exactly as TRL's chat template shows them.

skyrl-gym has no tool-schema channel, so the tools reach the model as prompt text. That text is
decided here, at generation time, and checked in: for each tool, the JSON schema
`transformers.utils.get_json_schema` reads off the TRL module's method (the author's words,
parameters and constraints as the TRL module lays them out), in the Hermes/Qwen `<tools>`
layout that Qwen's chat template renders, one `tojson` line per tool, in the order TRL lists
the methods. So a model trained through either module reads the same tool surface.

The method is not imported (its module is not rendered, let alone trusted, here): a stand-in
function carries its name, docstring and signature, each parameter's typed hint (`Param.annotation`,
the data its hint text is written from) turned into the type that text evaluates to in the
module, and `get_json_schema` reads that.
"""

from __future__ import annotations

import functools
import inspect
import json
import operator
from collections.abc import Callable, Sequence
from typing import Any, Literal

from orlgen.errors import OrlgenError
from orlgen.plan.hints import LITERAL, NONE, UNION, Hint
from orlgen.plan.json_schema import json_schema_reader
from orlgen.plan.planner import Param

# The text Qwen's chat template (TRL's shipped qwen3.jinja) puts around the tools in the system turn.
TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)
# The names `orlgen.plan.hints` writes, as `get_json_schema` sees them at run time (`orlgen.runtime.types`).
_NAMES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "Any": Any,
    "JSONObject": dict,
    "JSONArray": list,
}
_GENERICS: dict[str, Any] = {"list": list, "dict": dict, "tuple": tuple}


class PromptError(OrlgenError):
    """A tool cannot be shown in the prompt; the message names it."""


def prompt_pieces(schemas: Sequence[dict[str, Any]], env_system_prompt: str | None) -> list[str]:
    """The system turn Qwen's chat template renders for these tools (after the env's own system
    message, when it has one), in pieces that join to it: the head, one line per tool, the tail."""
    head = (f"{env_system_prompt}\n\n" if env_system_prompt else "") + TOOLS_HEAD
    return [head, *("\n" + json.dumps(schema, ensure_ascii=False) for schema in schemas), TOOLS_TAIL]


def shown_schema(name: str, docstring: str, params: Sequence[Param]) -> dict[str, Any]:
    """What `get_json_schema` reads off a TRL tool method of this name, docstring and parameters."""
    reader = json_schema_reader()
    if reader is None:
        raise PromptError("the skyrl trainer needs transformers to write its prompt: pip install 'orlgen[generate]'")
    try:
        return reader(_stand_in(name, docstring, params))
    except Exception as exc:  # get_json_schema's own errors, e.g. a parameter missing from `Args:`
        raise PromptError(f"tool {name!r}: get_json_schema cannot read it: {exc}") from exc


def _stand_in(name: str, docstring: str, params: Sequence[Param]) -> Callable[..., Any]:
    """A function that reads, to `get_json_schema`, as the TRL module's method (without `self`)."""

    def tool(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError  # never called: only read

    parameters = [
        inspect.Parameter(
            param.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if param.default is None else param.default,
            annotation=runtime_type(param.annotation),
        )
        for param in params
    ]
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = docstring
    tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {param.name: param.annotation for param in parameters} | {"return": str}
    return tool


def runtime_type(hint: Hint) -> Any:
    """The type a hint of `orlgen.plan.hints` evaluates to in a generated module: builtins, `Any`,
    `JSONObject`/`JSONArray`, `list[...]`, `dict[...]`, `tuple[...]`, `Literal[...]` and unions."""
    if hint.name == UNION:
        return functools.reduce(operator.or_, (runtime_type(member) for member in hint.members))
    if hint.name == LITERAL:
        return Literal[hint.values]
    if hint == NONE:
        return type(None)
    if hint.name in _GENERICS and hint.args:
        return _GENERICS[hint.name][tuple(runtime_type(arg) for arg in hint.args)]
    if hint.name in _NAMES and not hint.args:
        return _NAMES[hint.name]
    raise PromptError(f"a type hint orlgen does not write: {str(hint)!r}")
