"""Schema fidelity: how many facts of a tool's input JSON Schema reach the model.

For every tool of three schema sets (the repo's example envs, those captured in `generated/` and
those written the way published envs are, `examples/wordgrid.py` and `examples/icu_sepsis.py`; the
openreward SDK's built-in toolsets; hand-built hostile schemas) this extracts *schema facts* from
the tool's description and input JSON Schema and looks each one up in what the model is shown:
the JSON that `transformers.utils.get_json_schema(method)` produces for

- orlgen: the method of the module `orlgen.render.jobs.render_module` generates for a snapshot of the
  tools (imported from a temp file; methods = public functions of the env class, keyed by
  `fn.__name__`, as TRL collects them);
- TRL: the function `trl.experimental.openreward.environment._bind_tool_method` binds on a fresh
  `_RolloutEnvironment` subclass (binder or `get_json_schema` exceptions are caught and counted);

and, a third column, the JSON the agent module shows as it is (no `get_json_schema`):

- agent: each function of `TOOLS` of the module `render_module(snapshot, trainer_name="agent")`
  generates for the same snapshot (name, description, `parameters`: the sanitised JSON Schema),
  keyed by the wire name `CALLS` maps its name to. The classifier reads inline schemas, so each
  `$ref` is read through to the definition under the same `parameters`' `$defs` (both are sent);
  its prompt size counts the functions as sent, `$defs` and all (`Result.agent_prompt`);

and a fourth, what verl shows the model:

- verl: each function of the verl trainer's tool YAML (`<env>_verl_tools.yaml`, rendered by
  `orlgen.render.jobs.render_extra` for the same snapshot), keyed by the wire name the verl
  module's `CALLS` maps its name to (read from the rendered module's source: that module imports
  verl, which is not installed here). verl validates each entry into `OpenAIFunctionToolSchema`,
  which keeps of a property only `type`, `description` and `enum`, and hands the chat template
  its `model_dump(exclude_unset=True, exclude_none=True)`: the YAML holds exactly those keys, so
  that is the YAML's function as written (`Result.verl_prompt`).

Only that JSON is read (and the agent and verl modules' `CALLS`, for wire names), never orlgen's
internals, so the measure holds across rewrites of the generator. The SDK set and the published-style envs list each tool as `Environment.list_tools`
would; a tool identical to one of an earlier toolset (BackSearch and Web share
`web_fetch`/`web_search`) is counted once.

Each fact is found **structurally** (a JSON Schema keyword says it: `type`, `enum`, `items`,
`prefixItems`, `additionalProperties`, `required`, `nullable`, `default`, `properties`, the
param's/tool's own `description`), **as text** (only a description string says it), or **lost**.

Facts (per tool): tool present (1). The description is read as the Google-style docstring it
usually is: its prose is the tool-description fact, its `Returns:` block a `returns` fact, and an
`Args:` entry (or an un-headed `name: text` line naming a parameter) is the description of a
parameter whose schema has none. Per top-level parameter:
its name (`param-name`);
each non-null JSON type it admits; each enum/const value, of the param or of its array items
(null excluded: that is nullability);
item type(s) of arrays (per position for tuples), value type of maps; required-ness (always one
fact: required or optional); nullability (if null is admitted); default (if the property has
one, `null` included); each constraint keyword (minimum, maximum, exclusive*, multipleOf,
min/maxLength, pattern, format, min/maxItems, uniqueItems, min/maxProperties) on the param or
its anyOf/oneOf branches; each nested object property (name + type; through `$ref`, anyOf,
array items; 3 levels deep; a `$ref` cycle stops the walk), and of each nested property its
description (`nested-description`: its own, else its definition's), each constraint keyword
(`nested-constraint`) and its default (`nested-default`); the parameter description (its own
`description`, else the one of the definition it `$ref`s).

Matching rules (documented, applied identically to every side):

- A parameter is found by its wire name; else by a property whose description carries orlgen's
  `Sent as '<wire>'` note; else by a unique property whose name equals the wire name once both
  are lower-cased and stripped of non-alphanumerics (`file-path` ~ `file_path`, `from` ~
  `from_`). A parameter not found loses all its facts.
- Descriptions are compared with all whitespace removed (so re-indentation, re-flowing and
  orlgen's `Args:` -> `Args :` defusing still match); a description must appear whole.
  Found in its own place (param -> that param's `description`, tool -> the function's
  `description`) is structural; found elsewhere in the tool's JSON is text.
- Text matches for the other kinds look only in the parameter's model-facing description and
  need a recognisable phrase: type words (`string`/`str`, `integer`/`int`, ...), enum values as
  JSON/Python literals, `[<type>` or `list of <type>` for items, `required`/`optional`,
  `null`/`None`, `default: <value>`, constraint phrases (`>= 1`, `at most 50 characters`,
  `minimum 1`, the pattern itself, ...), and for nested properties `<name>: <type>` or
  `<name>?: <type>` where `<type>` starts with a type word or a sign of one (`"..."` for
  string, a digit for numbers, `{` or `<Ref>` for objects, `[` for arrays). The position of a
  nested name inside the structure is not checked. A nested field's description, constraint or
  default must be said in that field's part of the description: from `<name>:` (or `<name>?:`)
  to the next sibling field's name (a constraint phrase as above; a default as `= <value>` or
  `default: <value>`).

Besides found/lost, a shown fact is **altered** when its text changed on the way: a description or
Returns text not shown verbatim (runs of whitespace aside), or a parameter shown under another
name although a method can take its own (a keyword, a non-identifier or `self` must be renamed:
not counted).
**Prompt size** per module: characters of the tools JSON the model sees, each function dumped as
the chat template's `tojson` does, for orlgen, TRL, the agent module, the verl tool YAML, and the server's raw schemas
shown as they are.
**Output blocks** (orlgen only): `bench/blocks_env.py` is served and captured, each of its tools is
called once through the generated adapter, and each block the server sent (text, image) is looked
up in what the method returned; the count of blocks not found is `dropped`.

Run: `python -m bench.fidelity [--json PATH]`.
"""

from __future__ import annotations

from bench.fidelity.classify import STATUSES, Outcome, classify
from bench.fidelity.docstring import parse_docstring
from bench.fidelity.facts import KINDS, Fact, tool_facts
from bench.fidelity.hostile import _Shapes  # tests build a hostile schema from it
from bench.fidelity.measure import Result, all_groups, measure
from bench.fidelity.report import report
from bench.fidelity.sets import SETS, Group, ToolSchema
from bench.fidelity.views import View, prompt_chars, raw_prompt_chars

__all__ = [
    "KINDS",
    "SETS",
    "STATUSES",
    "Fact",
    "Group",
    "Outcome",
    "Result",
    "ToolSchema",
    "View",
    "_Shapes",
    "all_groups",
    "classify",
    "measure",
    "parse_docstring",
    "prompt_chars",
    "raw_prompt_chars",
    "report",
    "tool_facts",
]
