"""verl's SGLang server stop wrapped by profwin (``sglang_stop``, put in place by the integration
where verl's server module is), on a stand-in of verl's ``async_sglang_server`` module (a fake:
the dev environment has neither verl's server module nor SGLang;
integration_tests/verl/test_sglang_engine.py runs verl's own on a real tokenizer manager)."""

from __future__ import annotations

import asyncio
import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from profwin_verl import sglang_stop
from profwin_verl.seam import INTEGRATION

LABEL = f"{sglang_stop.SERVER_MODULE}.SGLangHttpServer.stop_profile"


def _module(error: str | None) -> tuple[ModuleType, list[Any]]:
    relocated: list[Any] = []
    module = ModuleType(sglang_stop.SERVER_MODULE)

    class SGLangHttpServer:
        async def stop_profile(self) -> None:
            if error:
                raise RuntimeError(error)
            module.relocate_rollout_traces("config", 0, 1, None)

    SGLangHttpServer.__module__, SGLangHttpServer.__qualname__ = sglang_stop.SERVER_MODULE, "SGLangHttpServer"
    module.SGLangHttpServer = SGLangHttpServer  # type: ignore[attr-defined]
    module.relocate_rollout_traces = lambda *args: relocated.append(args)  # type: ignore[attr-defined]
    return module, relocated


def _server() -> Any:
    return SimpleNamespace(
        profiler_controller=SimpleNamespace(config="config"),
        replica_rank=0,
        replica_world_size=1,
        profiler_keep_global_ranks=None,
    )


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Any:
    def install(error: str | None) -> tuple[ModuleType, list[Any]]:
        module, relocated = _module(error)
        monkeypatch.setitem(sys.modules, sglang_stop.SERVER_MODULE, module)
        assert INTEGRATION._stop_taking_a_stop(module) == [LABEL]
        assert INTEGRATION._stop_taking_a_stop(module) == []  # once
        return module, relocated

    yield install
    INTEGRATION.disable()


def test_a_stop_after_sglang_stopped_by_itself_is_a_stop_and_relocates(installed: Any) -> None:
    module, relocated = installed("Profiling is not in progress. Call /start_profile first.")
    asyncio.run(module.SGLangHttpServer.stop_profile(_server()))
    assert relocated == [("config", 0, 1, None)]


def test_any_other_error_is_verls_and_goes_on(installed: Any) -> None:
    module, relocated = installed("the scheduler is gone")
    with pytest.raises(RuntimeError, match="the scheduler is gone"):
        asyncio.run(module.SGLangHttpServer.stop_profile(_server()))
    assert relocated == []


def test_disable_gives_verl_its_own_stop_back(installed: Any) -> None:
    module, _ = installed("Profiling is not in progress.")
    assert INTEGRATION.disable() == [LABEL]
    with pytest.raises(RuntimeError, match="not in progress"):
        asyncio.run(module.SGLangHttpServer.stop_profile(_server()))
