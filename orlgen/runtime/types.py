"""The types generated tool methods are annotated with.

TRL shows the model the JSON schema `transformers.utils.get_json_schema` reads off each tool
method's annotations, so these must stay what that function already maps (`dict` →
`{"type": "object"}`, `str` → `{"type": "string"}`): `dict[str, Any]` would add
`"additionalProperties": {}` to what the model reads. A type checker is told the whole type
instead, which is what `mypy --strict` requires of a generated module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

    JSONObject: TypeAlias = dict[str, Any]  # an object with named properties (described in prose)
    JSONArray: TypeAlias = list[Any]  # an array whose items the schema leaves open
    ToolOutput: TypeAlias = str | list[dict[str, Any]]  # text, or content parts when it holds images
else:
    JSONObject = dict
    JSONArray = list
    ToolOutput = str
