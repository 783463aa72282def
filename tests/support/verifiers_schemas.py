"""`python tests/support/verifiers_schemas.py DIR MODULE...` (in the verifiers venv): print, as one
JSON object by module, the tools each generated verifiers module's toolset advertises over MCP — name, description and
input schema, as `MCPServer.list_tools` answers the harness, which forwards them to the model's
endpoint unchanged (TRAINERS.md §2.1; `tests/test_verifiers.py` checks that on a real run). Every
tool is listed (a task's session may offer fewer)."""

import asyncio
import importlib
import inspect
import json
import sys


def main(directory: str, *modules: str) -> None:
    sys.path.insert(0, directory)
    print(json.dumps({name: advertised(name) for name in modules}))


def advertised(module_name: str) -> list[dict]:
    from mcp.server.mcpserver import MCPServer
    from orlgen.runtime.verifiers import OrsToolset, OrsToolsetConfig, add_tools

    module = importlib.import_module(module_name)
    (toolset,) = (
        value
        for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, OrsToolset) and value is not OrsToolset
    )
    mcp = MCPServer("schemas")
    add_tools(toolset(OrsToolsetConfig()), mcp, None)
    listed = asyncio.run(mcp.list_tools())
    tools = [{"name": t.name, "description": t.description, "parameters": t.input_schema} for t in listed]
    return sorted(tools, key=lambda t: t["name"])


if __name__ == "__main__":
    main(*sys.argv[1:])
