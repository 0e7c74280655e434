"""profwin-openrlhf without OpenRLHF, Ray or vLLM: its flags, its settings' travel to Ray's
workers, the ``runtime_env`` it adds, and that nothing stops OpenRLHF. The version rule and the
verb pair's policy are every trainer's: integration_tests/test_trainer_layout.py. OpenRLHF
0.11.2's real rollout path on a two-node Ray cluster: integration_tests/openrlhf/."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import profwin
import profwin_openrlhf
from profwin.errors import ArgumentTypeError
from profwin_openrlhf.seam import GENERATOR_MODULE, INTEGRATION, SETUP_HOOK, runtime_env
from profwin_openrlhf.settings import ENV, OpenRLHFProfiling, split_argv

DEFAULT_OUTPUT_DIR = "/tmp/profwin-rollouts"


def test_the_flags_are_taken_out_and_the_rest_left_for_openrlhf() -> None:
    argv = ["--actor.model_name_or_path", "m", "--profwin.rollouts", "1,3", "--vllm.num_engines", "2", "--profwin.spec=2:6"]
    settings, rest = split_argv(argv)
    assert rest == ["--actor.model_name_or_path", "m", "--vllm.num_engines", "2"]
    assert settings is not None
    assert (str(settings.rollouts), dict(settings.spec)) == ("1,3", {"window": "2:6", "output_dir": DEFAULT_OUTPUT_DIR})
    assert split_argv(["--vllm.num_engines", "2"]) == (None, ["--vllm.num_engines", "2"])
    spec = json.dumps({"window": "2:6 tokens", "output_dir": "/shared/t", "record": ["shapes"]})
    settings, _ = split_argv(["--profwin.rollouts", "%10", "--profwin.spec", spec])
    assert settings is not None
    assert (str(settings.rollouts), str(settings.spec_here().window), settings.spec_here().shapes) == ("0%10", "2:6 tokens", True)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--profwin.rollouts", "1"], "--profwin.spec: is needed with --profwin.rollouts"),
        (["--profwin.spec", "2:6"], "--profwin.rollouts: is needed with --profwin.spec"),
        (["--profwin.rollouts", "1", "--profwin.spec"], "--profwin.spec: needs a value"),
        (["--profwin.rollouts", "1", "--profwin.rollouts", "2"], "--profwin.rollouts: is given twice"),
        (["--profwin.window", "2:6"], "--profwin.window: is not one of profwin-openrlhf's flags"),
        (["--profwin.rollouts", "1-3", "--profwin.spec", "2:6"], "--profwin.rollouts: must be rollout ids like '3,7'"),
        (
            ["--profwin.rollouts", "1", "--profwin.spec", "6:2"],
            "--profwin.spec end must be > --profwin.spec start (got --profwin.spec start=6",
        ),
        (["--profwin.rollouts", "1", "--profwin.spec", '{"output_dir": "/t"}'], "--profwin.spec: must say the window"),
        (["--profwin.rollouts", "1", "--profwin.spec", '{"window": "2:6", "colour": 1}'], "--profwin.spec: unknown key 'colour'"),
    ],
)
def test_a_bad_flag_names_the_flag_the_value_and_the_rule(argv: list[str], message: str) -> None:
    with pytest.raises(profwin.ConfigError) as caught:
        split_argv(argv)
    assert str(caught.value).startswith(message), str(caught.value)


def test_the_launcher_stops_on_a_bad_flag_in_one_line_before_openrlhf_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "profwin_openrlhf.train_ppo_ray", "--profwin.rollouts", "1", "--profwin.spec", "6:2", "--x"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "profwin-openrlhf: error: --profwin.spec end must be > --profwin.spec start (got --profwin.spec start=6, "
        "--profwin.spec end=2)"
    ]


def test_the_output_folder_is_resolved_where_each_process_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = OpenRLHFProfiling(rollouts="1", spec=json.dumps({"window": "2:6", "output_dir": "$NODE_DIR/traces"}))
    monkeypatch.setenv("NODE_DIR", "/nodes/a")
    assert settings.spec_here().output_dir == Path("/nodes/a/traces")
    monkeypatch.setenv("NODE_DIR", "/nodes/b")
    travelled = OpenRLHFProfiling.from_env({ENV: settings.to_env()})
    assert travelled == settings
    assert travelled is not None
    assert travelled.spec_here().output_dir == Path("/nodes/b/traces")
    assert OpenRLHFProfiling.from_env({}) is None
    with pytest.raises(profwin.ConfigError, match=r"^--profwin\.spec: must say the window"):
        OpenRLHFProfiling.from_env({ENV: '{"rollouts": "1"}'})


def test_the_runtime_env_keeps_openrlhfs_and_adds_the_hook_and_the_settings() -> None:
    settings = OpenRLHFProfiling(rollouts="1", spec="2:6")
    base = {"env_vars": {"NCCL_DEBUG": "WARN"}, "pip": ["x"]}
    env = runtime_env(settings, base)
    assert env == {
        "env_vars": {"NCCL_DEBUG": "WARN", ENV: settings.to_env()}, "pip": ["x"], "worker_process_setup_hook": SETUP_HOOK,
    }  # fmt: skip
    assert base == {"env_vars": {"NCCL_DEBUG": "WARN"}, "pip": ["x"]}  # the caller's is left as it was
    assert runtime_env(settings, env) == env
    with pytest.raises(profwin.PluginError, match=re.escape("already has a worker_process_setup_hook ('mine.setup')")):
        runtime_env(settings, {"worker_process_setup_hook": "mine.setup"})


def test_enable_without_openrlhf_warns_once_and_changes_nothing() -> None:
    assert importlib.util.find_spec("openrlhf") is None  # the dev environment has no OpenRLHF
    before = list(sys.meta_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert profwin_openrlhf.enable(OpenRLHFProfiling(rollouts="1", spec="2:6")) == []
    assert [str(w.message) for w in caught] == [
        "profwin-openrlhf left OpenRLHF unprofiled: OpenRLHF is not installed in this environment "
        "(profwin-openrlhf supports openrlhf>=0.11,<0.12)"
    ]
    assert sys.meta_path == before


def test_the_setup_hook_never_raises_and_waits_for_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker hook: bad settings are one warning, never raised (a worker must start); good ones
    arm a watcher that acts when OpenRLHF's module is imported, not before."""
    from profwin_openrlhf import seam

    monkeypatch.setenv(ENV, "{not json")
    with pytest.warns(RuntimeWarning, match=f"profwin-openrlhf left OpenRLHF unprofiled: {ENV}: must be"):
        seam.setup()  # said, not raised
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv(ENV, OpenRLHFProfiling(rollouts="1", spec="2:6").to_env())
    seam.setup()
    seam.setup()  # once
    watchers = [f for f in sys.meta_path if getattr(f, "name", None) == GENERATOR_MODULE]
    assert len(watchers) == 1
    assert INTEGRATION.disable() == [f"{GENERATOR_MODULE} (when imported)"]
    assert not any(getattr(f, "name", None) == GENERATOR_MODULE for f in sys.meta_path)


DEEP = '{"window": "2:6", "x": ' + "[" * 5000 + "]" * 5000 + "}"


@pytest.mark.parametrize("flags", [[], ["--profwin.rollouts", "1", "--profwin.spec", "2:6"]])
def test_the_launcher_without_openrlhf_is_one_line_naming_the_install(flags: list[str]) -> None:
    """It warned, then ended in runpy's ImportError traceback, with profwin's flags and without."""
    assert importlib.util.find_spec("openrlhf") is None
    done = subprocess.run(
        [sys.executable, "-m", "profwin_openrlhf.train_ppo_ray", *flags, "--actor.model_name_or_path", "m"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "profwin-openrlhf: error: OpenRLHF is not installed in this environment, and profwin-openrlhf runs its "
        "openrlhf.cli.train_ppo_ray: pip install 'openrlhf>=0.11,<0.12'"
    ]


def test_a_spec_nested_past_the_bound_is_one_line() -> None:
    """JSON 5,000 deep in --profwin.spec escaped as a RecursionError."""
    with pytest.raises(profwin.ConfigError) as caught:
        split_argv(["--profwin.rollouts", "1", "--profwin.spec", DEEP])
    assert caught.value.path == "--profwin.spec"
    assert "nested deeper than 100 levels" in str(caught.value)
    assert len(str(caught.value)) < 400
    done = subprocess.run(
        [sys.executable, "-m", "profwin_openrlhf.train_ppo_ray", "--profwin.rollouts", "1", "--profwin.spec", DEEP],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (lambda: OpenRLHFProfiling.from_env({ENV: "{not json"}), ENV),
        (lambda: OpenRLHFProfiling.from_env({ENV: "[" * 5000 + "]" * 5000}), ENV),
        (lambda: OpenRLHFProfiling.from_env({ENV: json.dumps({"rollouts": "1", "spec": DEEP})}), "--profwin.spec"),
        (lambda: OpenRLHFProfiling.from_env({ENV: json.dumps({"rollouts": [1.5], "spec": "2:6"})}), "--profwin.rollouts[0]"),
        (lambda: OpenRLHFProfiling.from_env({ENV: json.dumps({"rollouts": "1", "spec": "2:6", "colour": 1})}), ENV),
        (lambda: OpenRLHFProfiling.from_env({ENV: json.dumps(["1", "2:6"])}), ENV),
        (lambda: OpenRLHFProfiling.from_env(["not", "a", "mapping"]), "environ"),  # type: ignore[arg-type]
        (lambda: OpenRLHFProfiling(rollouts="1", spec=5), "spec"),
        (lambda: OpenRLHFProfiling(rollouts="1", spec={"window": "2:6", "output_dir": ""}), "spec.output_dir"),
        (lambda: OpenRLHFProfiling(rollouts="x", spec="2:6"), "rollouts"),
        (lambda: OpenRLHFProfiling(rollouts="1", spec={"window": {"start": True}}), "spec.window"),
        (lambda: split_argv(["--profwin.rollouts", 5, "--profwin.spec", "2:6"]), "argv[1]"),  # type: ignore[list-item]
        (lambda: split_argv("--profwin.rollouts 1"), "argv"),  # type: ignore[arg-type]
    ],
)
def test_the_settings_api_takes_bad_values_as_config_errors(make: object, where: str) -> None:
    """The PROFWIN_OPENRLHF variable, split_argv, OpenRLHFProfiling.of and the constructor let bad
    values through (or out as RecursionError); each is a ConfigError naming where, in one line (an
    ArgumentTypeError, a TypeError of profwin's family, for code giving split_argv no list of text)."""
    with pytest.raises(profwin.ProfwinError) as caught:
        make()  # type: ignore[operator]
    assert isinstance(caught.value, ArgumentTypeError if where.startswith("argv") else profwin.ConfigError)
    assert caught.value.path.startswith(where), (caught.value.path, str(caught.value))
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 600


def test_the_settings_travel_in_their_json_form() -> None:
    """One converter: what the environment carries is ``to_dict()``, read back by the class's own
    checks (``from_env``) and by the converter's reader (``from_dict``, what an engine actor uses)."""
    settings = OpenRLHFProfiling(rollouts="3+4", spec={"window": "2:6 tokens", "record": ["shapes"]}, timeout=12)
    assert json.loads(settings.to_env()) == settings.to_dict() == {
        "rollouts": "3+4", "spec": {"window": "2:6 tokens", "record": ["shapes"], "output_dir": DEFAULT_OUTPUT_DIR},
        "timeout": 12, "timeline": False,
    }  # fmt: skip
    assert OpenRLHFProfiling.from_env({ENV: settings.to_env()}) == settings
    assert OpenRLHFProfiling.from_dict(json.loads(settings.to_env())) == settings


def test_one_flag_switches_the_session_timeline_on() -> None:
    settings, rest = split_argv(["--profwin.rollouts", "1", "--profwin.timeline", "--profwin.spec", "2:6", "--x", "y"])
    assert rest == ["--x", "y"]
    assert settings is not None
    assert settings.spec_here().timeline is True
    assert OpenRLHFProfiling.from_env({ENV: settings.to_env()}).spec_here().timeline is True  # travels to the workers
    settings, _ = split_argv(["--profwin.rollouts", "1", "--profwin.spec", "2:6"])
    assert settings is not None
    assert settings.spec_here().timeline is False
    with pytest.raises(profwin.ConfigError, match=r"--profwin\.timeline: takes no value"):
        split_argv(["--profwin.rollouts", "1", "--profwin.spec", "2:6", "--profwin.timeline=maybe"])
    with pytest.raises(profwin.ConfigError, match=r"--profwin\.rollouts: is needed with --profwin\.spec"):
        split_argv(["--profwin.timeline", "--profwin.spec", "2:6"])
