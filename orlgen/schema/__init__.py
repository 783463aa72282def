"""The schema model: every JSON Schema orlgen renders from, parsed once into typed `Node`s.

`parse_schema` is the sanitising boundary. A schema comes from a server or from a file in a
pull request, so it is hostile until parsed: only the keywords listed in `parser._STRUCTURE` survive,
references resolve only inside the same schema, cycles and depth are bounded, numbers are
finite, and every keyword that is dropped is recorded (`Schema.dropped`) so the CLI can say so.
Everything downstream (type hints, the prose the model reads, dataset columns, the models handed
to datamodel-code-generator, `orlgen diff`) reads `Node`s, never raw dicts, so they cannot
disagree about what a schema means, and no keyword the generator does not understand (such as
datamodel-code-generator's `customTypePath`, which becomes an import) can reach generated code.

The snapshot keeps the raw schemas exactly as the server sent them; sanitising is part of
rendering, so `check` and `diff` still see the truth.

Modules: `raw` (JSON as stored, before parsing), `model` (`Schema`, `Node`), `parser` (raw →
`Schema`). Writing `Node`s back out as JSON Schema for datamodel-code-generator is the plan's
job (`orlgen.plan.emit`).
"""

from orlgen.schema.model import Dropped, Node, Schema, SchemaError, printable
from orlgen.schema.parser import parse_schema
from orlgen.schema.raw import JSON, declared_order, infer_task_schema, json_problem, json_type

__all__ = [
    "JSON",
    "Dropped",
    "Node",
    "Schema",
    "SchemaError",
    "declared_order",
    "infer_task_schema",
    "json_problem",
    "json_type",
    "parse_schema",
    "printable",
]
