from __future__ import annotations

import pytest

from profwin import ConfigError
from profwin_sglang import VERIFIED_VERSION, features
from profwin_sglang.versions import sglang_version


def test_a_release_candidate_is_not_the_release() -> None:
    assert features("0.5.23rc0").exact_immediate is False
    assert features("v0.5.23.post1").exact_immediate is True


def test_version_rejects_junk() -> None:
    with pytest.raises(ConfigError, match="engine_version"):
        features("latest")


def test_features_by_version() -> None:
    new, old = features("0.5.23"), features("0.5.10")
    assert new.req_type
    assert new.client_profile_id
    assert new.exact_immediate
    assert new.server_info_path == "/server_info"
    assert not (old.req_type)
    assert not (old.client_profile_id)
    assert not (old.exact_immediate)
    assert old.server_info_path == "/get_server_info"
    assert features(None).label == "unknown"
    assert features(None).exact_immediate
    assert features(VERIFIED_VERSION).label == "0.5.23"


def test_installed_version_without_sglang() -> None:
    # The dev environment never installs sglang (it lives in its own cached venv).
    assert sglang_version() is None
