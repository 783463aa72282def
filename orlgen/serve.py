"""Serve `openreward` Environment classes on a loopback port: `python -m orlgen.serve
module:EnvClass [PORT]`.

The code lives in the runtime (`orlgen.runtime.session.local`), because generated adapters serve their
own `module:EnvClass` target when given no URL, and the runtime never imports the generator.
This module is the generator's and the command line's name for it.
"""

from __future__ import annotations

from orlgen.runtime.session.local import ServeError, ServerProcess, load_env_class, main, serving

__all__ = ["ServeError", "ServerProcess", "load_env_class", "main", "serving"]

if __name__ == "__main__":
    main()
