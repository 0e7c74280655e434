"""A block of atomic writes is kept whole or not at all (issue 41, class 3): Ctrl-C or SIGTERM in
:func:`~profwin.atomic.all_or_nothing` removes what the block put in place and puts back what it
replaced; a finished inner block hands its files to the outer one. (The commands that run in one,
``profwin merge`` held after its rename among them: profwin-traces' tests.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from profwin.atomic import all_or_nothing, write_atomic


def interrupted(*writes: tuple[Path, bytes], nested: bool = False) -> None:
    """Write ``writes`` in an :func:`all_or_nothing` block (in an inner, finished one with
    ``nested``) that then ends by Ctrl-C."""
    with all_or_nothing():
        if nested:
            with all_or_nothing():
                for path, data in writes:
                    write_atomic(path, data)
        else:
            for path, data in writes:
                write_atomic(path, data)
        assert all(path.read_bytes() == data for path, data in writes)
        raise KeyboardInterrupt


def test_all_or_nothing_in_process(tmp_path: Path) -> None:
    kept, new = tmp_path / "kept.txt", tmp_path / "new.txt"
    kept.write_text("before")
    with pytest.raises(KeyboardInterrupt):
        interrupted((kept, b"after"), (new, b"new"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
    assert kept.read_text() == "before"
    # Nested: an inner block that finished hands its files to the outer one, which decides.
    with pytest.raises(KeyboardInterrupt):
        interrupted((new, b"inner"), nested=True)
    assert not new.exists()
    with all_or_nothing():
        write_atomic(kept, b"finished")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
    assert kept.read_text() == "finished"
    write_atomic(kept, b"outside a block")  # no copy kept outside a block
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
