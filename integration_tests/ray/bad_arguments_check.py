"""profwin-ray's public callables driven with bad arguments, in the Ray 2.60 environment (its
root imports cleanly without ray, but every call reaches a cluster): the sibling of
``integration_tests/test_bad_arguments.py`` for the one plugin whose engine the dev environment
does not install. A local one-node cluster is started first, so a call whose arguments pass goes
as far as a user's would.

Each name in ``profwin_ray.__all__`` is called once per parameter and bad value
(``bad_values.FIXED``): that parameter gets the value, the other required ones a plain ``"x"``
(``actor_call``: an object and a function). Anything raised outside profwin's family is printed
as ``UNEXPECTED name parameter value: error``; a callable given where the hint says ``Callable``
is a good value, and what it raises is its own. Prints ``CALLS n`` and ``UNEXPECTED n`` on stdout.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from pathlib import Path
from typing import Any

import ray

import profwin
import profwin_ray
from profwin.plugin import shown

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bad_values import FIXED  # standard library only, shared with test_bad_arguments.py

ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")  # its own cluster, never another test's
os.chdir(sys.argv[1])  # a bad value may still be a usable file name

GOOD: dict[str, dict[str, Any]] = {"actor_call": {"self": object(), "fn": lambda actor, *args: None}}
calls = unexpected = 0
for name in profwin_ray.__all__:
    call = getattr(profwin_ray, name)
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = [p for p in inspect.signature(call).parameters.values() if p.kind in kinds]
    for target in parameters:
        for value in FIXED:
            if "Callable" in str(target.annotation) and callable(value):
                continue
            kwargs = {
                p.name: value if p is target else GOOD.get(name, {}).get(p.name, "x")
                for p in parameters
                if p is target or p.default is inspect.Parameter.empty
            }
            calls += 1
            try:
                result = call(**kwargs)
                if inspect.iscoroutine(result):
                    asyncio.run(result)
            except profwin.ProfwinError:
                pass
            except Exception as exc:  # anything else is what this check is for
                unexpected += 1
                print(f"UNEXPECTED {name} {target.name} {shown(value)[:60]}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
print(f"CALLS {calls}", flush=True)
print(f"UNEXPECTED {unexpected}", flush=True)
ray.shutdown()
