"""One converter for the models' JSON form: attrs' ``asdict`` with one value hook, read back by annotation."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from profwin import Artifact, ConfigError, EnginePlan, RemoteResult, Window
from profwin.json_form import JsonForm, from_json, to_json

ROOT = Path(__file__).resolve().parents[3]


def _plan(tmp_path: Path) -> EnginePlan:
    return EnginePlan(
        engine="vllm",
        version="0.32.0",
        version_source="given",
        mechanism="per-session",
        window=Window.parse("20:80"),
        records=Window.parse("0:80"),
        output_dir=tmp_path,
        launch={"profiler_config": {"profiler": "torch", "torch_profiler_dir": str(tmp_path)}},
        env={"VLLM_TORCH_PROFILER_DIR": str(tmp_path)},
        request={"num_steps": 60, "delay": 20},
        notes=("trim afterwards",),
        details={"first": [1, 2]},
    )


def test_a_plan_survives_a_json_file(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    text = json.dumps(plan.to_dict(), allow_nan=False)
    data = json.loads(text)
    assert data["window"] == "20:80"
    assert data["records"] == "0:80"
    assert data["output_dir"] == str(tmp_path)
    assert data["notes"] == ["trim afterwards"]
    back = EnginePlan.from_dict(data)
    assert back == plan
    assert back.to_dict() == data


def test_nested_models_and_read_only_views_become_plain_data(tmp_path: Path) -> None:
    art = Artifact(path=tmp_path / "t.json", steps=Window.parse("3:5"), bytes=10, rank=1)
    result = RemoteResult(target="http://127.0.0.1:1", ok=True, artifacts=(art,), details={"stop_notes": ("a",)})
    data = result.to_dict()
    assert data["artifacts"] == [
        {"path": str(tmp_path / "t.json"), "steps": "3:5", "bytes": 10, "rank": 1, "kind": "trace", "producer": ""}
    ]
    assert data["details"] == {"stop_notes": ["a"]}
    assert json.loads(json.dumps(data)) == data
    assert to_json(_plan(tmp_path), only=("engine", "window")) == {"engine": "vllm", "window": "20:80"}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"engine": "vllm"}, "KeyError"),
        (
            {
                **{"engine": "v", "version": None, "version_source": "given", "mechanism": "m"},
                "window": "9:3",
                "records": None,
                "output_dir": "/x",
            },
            "end",
        ),
        (["not", "a", "mapping"], "must be a mapping"),
    ],
)
def test_bad_data_is_a_config_error_at_the_path(data: object, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason) as info:
        from_json(EnginePlan, data, path="plan")  # type: ignore[arg-type]
    assert info.value.path == "plan"


def test_no_model_writes_its_json_form_by_hand() -> None:
    """Every ``to_dict``/``from_dict`` in the sources goes through the converter."""
    by_hand = []
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in ("to_dict", "from_dict", "details"):
                calls = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
                if not calls & {"to_json", "from_json"}:
                    by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert by_hand == []
    assert JsonForm.to_dict.__qualname__ == "JsonForm.to_dict"
