"""What every trainer integration shares, on a toy trainer: the verb pair and its one policy
(never raise into the trainer, one warning, run unprofiled), the version rule on
``PluginSpec.requires``, wrap once, wrap at import, the rollout counter per object, ``records()``,
and the settings base. The trainer packages' own seams: their tests, and the floor plan that holds
them alike, integration_tests/test_trainer_layout.py."""

from __future__ import annotations

import json
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin.discovery import unmet
from profwin.plugin import PluginError, PluginSpec, TrainerIntegration
from profwin.plugin.trainers import RolloutProfiler, RolloutSettings

PLUGIN = PluginSpec(name="toy", kind="trainer", target="toy_seam:INTEGRATION", requires=("toytrainer>=1.2,<2",))


class Toy:
    """The toy trainer's seam: a class whose ``generate`` is a rollout."""

    def generate(self, n: int) -> str:
        return f"generated {n}"


class ToyIntegration(TrainerIntegration[RolloutSettings]):
    trainer = "Toy"
    settings_type = RolloutSettings
    seam_missing = False
    fail_after_first = False

    def seams(self) -> None:
        if self.seam_missing:
            raise PluginError("Toy has no Toy.generate")

    def install(self, settings: RolloutSettings | None) -> list[str]:
        done = self.replace(Toy, "generate", self._profiled)
        if self.fail_after_first:
            raise RuntimeError("the second seam is gone")
        return done

    def _profiled(self, original: Any) -> Any:
        def generate(toy: Toy, n: int) -> str:
            settings = self.settings
            if settings is None:
                return str(original(toy, n))
            profiler, rollout_id = self.next_rollout(
                toy, settings, lambda s: RolloutProfiler("toy", "0:1", s.rollouts, engines=[])
            )
            return str(self.around(profiler, rollout_id, lambda: original(toy, n)))

        return generate


def _site(tmp_path: Path, version: str | None) -> Path:
    site = tmp_path / f"site-{version}"
    site.mkdir()
    if version is not None:
        info = site / f"toytrainer-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: toytrainer\nVersion: {version}\n")
    return site


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ToyIntegration]:
    monkeypatch.syspath_prepend(str(_site(tmp_path, "1.4.0")))
    integration = ToyIntegration(PLUGIN)
    yield integration
    integration.disable()


def _enable(integration: ToyIntegration, *args: Any, **kwargs: Any) -> tuple[list[str], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = integration.enable(*args, **kwargs)
    return done, [str(w.message) for w in caught if w.category is RuntimeWarning]


def test_enable_puts_the_seam_in_place_once_and_disable_puts_it_back(toy: ToyIntegration) -> None:
    original = Toy.generate
    settings = RolloutSettings(rollouts="5", spec="0:1")
    assert _enable(toy, settings) == ([f"{__name__}.Toy.generate"], [])
    assert (toy.enabled, toy.settings) == (True, settings)
    assert Toy.generate is not original
    assert _enable(toy, settings) == ([], [])  # in place already
    assert Toy().generate(3) == "generated 3"  # rollout 0: not chosen, a counter
    assert toy.disable() == [f"{__name__}.Toy.generate"]
    assert (Toy.generate, toy.enabled, toy.settings) == (original, False, None)
    assert toy.disable() == []


@pytest.mark.parametrize(
    ("version", "force", "says"),
    [
        (None, False, "Toy is not installed in this environment (profwin-toy supports toytrainer>=1.2,<2)"),
        (None, True, "Toy is not installed in this environment (profwin-toy supports toytrainer>=1.2,<2)"),
        ("1.1.9", False, "profwin-toy supports toytrainer>=1.2,<2, and Toy is 1.1.9: its seams may differ (enable(force=True) tries anyway)"),
        ("2.0.0", False, "profwin-toy supports toytrainer>=1.2,<2, and Toy is 2.0.0: its seams may differ (enable(force=True) tries anyway)"),
    ],
)  # fmt: skip
def test_a_trainer_outside_its_range_is_one_warning_and_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str | None, force: bool, says: str
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, version)))
    integration = ToyIntegration(PLUGIN)
    original = Toy.generate
    done, said = _enable(integration, RolloutSettings(rollouts=1, spec="0:1"), force=force)
    assert (done, said) == ([], [f"profwin-toy left Toy unprofiled: {says}"])
    assert (Toy.generate, integration.enabled) == (original, False)


@pytest.mark.parametrize("version", ["1.2.0", "1.9.9.dev0", "1.4.0rc1"])
def test_releases_in_the_range_pass_and_force_takes_any(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, version)))
    integration = ToyIntegration(PLUGIN)
    try:
        assert _enable(integration, {"rollouts": 1, "spec": "0:1"}) == ([f"{__name__}.Toy.generate"], [])
    finally:
        integration.disable()
    monkeypatch.syspath_prepend(str(_site(tmp_path, "7.0")))
    assert _enable(integration, {"rollouts": 1, "spec": "0:1"}, force=True)[0] == [f"{__name__}.Toy.generate"]
    integration.disable()


def test_what_goes_wrong_is_one_warning_and_a_failed_install_is_put_back(toy: ToyIntegration) -> None:
    original = Toy.generate
    toy.seam_missing = True
    assert _enable(toy, {"rollouts": 1, "spec": "0:1"}) == ([], ["profwin-toy left Toy unprofiled: Toy has no Toy.generate"])
    toy.seam_missing = False
    toy.fail_after_first = True
    assert _enable(toy, {"rollouts": 1, "spec": "0:1"}) == (
        [], ["profwin-toy left Toy unprofiled: RuntimeError: the second seam is gone"]
    )  # fmt: skip
    assert (Toy.generate, toy.enabled) == (original, False)  # all or nothing
    toy.fail_after_first = False
    assert _enable(toy, {"rollouts": 1, "spec": "6:2"}) == (
        [], ["profwin-toy left Toy unprofiled: settings.spec end must be > settings.spec start (got settings.spec start=6, settings.spec end=2)"]
    )  # fmt: skip
    assert _enable(toy) == (
        [],
        ["profwin-toy left Toy unprofiled: enable() needs this trainer's settings: RolloutSettings(rollouts=..., spec=...)"],
    )
    assert _enable(toy, {"rollouts": 1, "spec": "0:1"})[0] == [f"{__name__}.Toy.generate"]
    # A later enable that fails leaves what the earlier one put in place as it was.
    assert _enable(toy, {"rollouts": "x", "spec": "0:1"})[0] == []
    assert (toy.enabled, str(toy.settings.rollouts if toy.settings else None)) == (True, "1")


def test_a_refusal_from_a_hook_is_said_once(toy: ToyIntegration) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            toy.refuse(PluginError("the router is gone"))
    assert [str(w.message) for w in caught] == ["profwin-toy left Toy unprofiled: the router is gone"]


def test_each_object_counts_its_own_rollouts_and_records_gathers_them(toy: ToyIntegration) -> None:
    toy.enable(RolloutSettings(rollouts="1", spec="0:1"))
    first, second = Toy(), Toy()
    with pytest.warns(profwin.WindowWarning, match="rollout 1: not profiled"):  # no engine to profile
        assert [first.generate(i) for i in range(3)] == ["generated 0", "generated 1", "generated 2"]
    with pytest.warns(profwin.WindowWarning, match="rollout 1: not profiled"):
        second.generate(0), second.generate(1)
    assert [(r.rollout, r.ok) for r in toy.records()] == [(1, False), (1, False)]
    toy.enable(RolloutSettings(rollouts="3", spec="0:1"))  # new settings: a new profiler, the count goes on
    with pytest.warns(profwin.WindowWarning, match="rollout 3: not profiled"):
        first.generate(3)
    assert [r.rollout for r in toy.records()] == [1, 1, 3]


def test_replace_with_a_key_replaces_the_original_again_and_an_inherited_attribute_goes_back_to_inheriting(
    toy: ToyIntegration,
) -> None:
    class Child(Toy):
        pass

    made: list[object] = []

    def make(tag: str) -> Any:
        def wrap(original: Any) -> Any:
            made.append(original)
            return lambda self, n: f"{tag}: {original(self, n)}"

        return wrap

    assert toy.replace(Child, "generate", make("a"), key="a") == [f"{__name__}.{Child.__qualname__}.generate"]
    assert toy.replace(Child, "generate", make("b"), key="b") == [f"{__name__}.{Child.__qualname__}.generate"]
    assert Child().generate(1) == "b: generated 1"  # b wraps the original, not a
    assert made == [Toy.generate, Toy.generate]
    assert toy.original(Child, "generate") is Toy.generate
    toy.disable()
    assert "generate" not in vars(Child)


def test_a_module_is_wrapped_right_after_its_first_import(
    toy: ToyIntegration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "watched_pkg").mkdir()
    (tmp_path / "watched_pkg" / "__init__.py").write_text("")
    (tmp_path / "watched_pkg" / "mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[types.ModuleType] = []

    def then(module: types.ModuleType) -> list[str]:
        seen.append(module)
        return ["watched"]

    assert toy.when_imported("watched_pkg.mod", then) == ["watched_pkg.mod (when imported)"]
    assert toy.when_imported("watched_pkg.mod", then) == []  # once
    import watched_pkg.mod  # type: ignore[import-not-found]

    assert seen == [watched_pkg.mod]
    assert watched_pkg.mod.VALUE == 1
    assert toy.when_imported("watched_pkg.mod", then) == ["watched"]  # imported: now
    for name in ("watched_pkg.mod", "watched_pkg"):
        del sys.modules[name]

    def broken(module: types.ModuleType) -> list[str]:
        raise RuntimeError("its class is gone")

    toy.when_imported("watched_pkg.mod", broken)
    with pytest.warns(RuntimeWarning, match="profwin-toy left Toy unprofiled: RuntimeError: its class is gone"):
        import watched_pkg.mod  # the trainer's import succeeds all the same
    for name in ("watched_pkg.mod", "watched_pkg"):
        del sys.modules[name]
    toy.when_imported("watched_pkg.other", then)
    assert toy.disable() == ["watched_pkg.other (when imported)"]
    assert not [f for f in sys.meta_path if getattr(f, "name", None) == "watched_pkg.other"]


# -- the settings base ------------------------------------------------------------------------------


def test_settings_read_as_the_trainer_names_them_and_travel_in_their_json_form(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = {"rollouts": "--x.rollouts", "spec": "--x.spec"}
    with pytest.raises(profwin.ConfigError, match=r"^--x\.rollouts: must be rollout ids"):
        RolloutSettings.read({"rollouts": "1-3", "spec": "2:6"}, keys=keys)
    with pytest.raises(profwin.ConfigError, match=r"^--x\.spec end must be > --x\.spec start"):
        RolloutSettings.read({"rollouts": "1", "spec": "6:2"}, keys=keys)
    with pytest.raises(profwin.ConfigError, match=r"^--x\.spec: must say the window"):
        RolloutSettings.read({"rollouts": "1"}, keys=keys)
    with pytest.raises(profwin.ConfigError, match=r"^t: must be a number of seconds"):
        RolloutSettings.read({"rollouts": "1", "spec": "2:6", "timeout": -1}, keys={"timeout": "t"})
    with pytest.raises(profwin.ConfigError, match=r"^settings: unknown key 'rollout' .*; did you mean 'rollouts'\?"):
        RolloutSettings.of({"rollout": 1, "spec": "2:6"})
    with pytest.raises(profwin.ConfigError, match=r"^settings: must be RolloutSettings or a mapping of its fields \(got 5\)"):
        RolloutSettings.of(5)
    settings = RolloutSettings(rollouts="%10", spec={"window": "2:6 tokens", "output_dir": "$NODE/t"}, timeout=5)
    data = settings.to_dict()
    assert data == {
        "rollouts": "0%10", "spec": {"window": "2:6 tokens", "output_dir": "$NODE/t"}, "timeout": 5, "timeline": False
    }  # fmt: skip
    assert RolloutSettings.from_dict(json.loads(json.dumps(data))) == RolloutSettings.of(data) == settings
    monkeypatch.setenv("NODE", "/nodes/a")
    assert settings.spec_here().output_dir == Path("/nodes/a/t")
    assert RolloutSettings(rollouts=1, spec=profwin.Window(2, 6)).spec == {"window": "2:6", "output_dir": "/tmp/profwin-rollouts"}


# -- the version rule: requirements as data ---------------------------------------------------------


def test_unmet_reads_the_installed_versions_with_packagings_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, "1.16.1.dev0")))
    assert unmet(["toytrainer>=1.11,<1.17"]) == []  # a development release in the range counts
    (problem,) = unmet(["toytrainer>=1.17"])
    assert (str(problem), problem.found) == ("toytrainer>=1.17 (found toytrainer 1.16.1.dev0)", "1.16.1.dev0")
    (missing,) = unmet(["no-such-distribution-xyz"])
    assert (str(missing), missing.found) == ("no-such-distribution-xyz", None)
    assert unmet(["json"]) == []  # no version asked: an importable module of the name is enough
    assert unmet(["toytrainer>=9; python_version < '3'"]) == []  # not for this Python
    with pytest.raises(profwin.ConfigError, match=r"^requires\[1\]: must be a requirement like 'trl>=1.11,<1.17'"):
        unmet(["toytrainer", "trl >=>= 1"])
