"""The ``*.dist-info`` folders pip would write for this workspace's packages, without installing them.

Standard library only (no pytest): the integration tests' conftest.py and the benchmarks that
launch engines (benchmarks/parts/sglang_fidelity.py) both use it.
"""

from __future__ import annotations

from pathlib import Path


def dist_info_site(site: Path, *packages: str, groups: tuple[str, ...] | None = None) -> Path:
    """Write into ``site`` the ``*.dist-info`` folders pip would write for these workspace
    packages (``packages/<name>``): name, version and entry points (only ``groups`` when given),
    read from each package's pyproject.toml. Environments that take profwin from this checkout
    through PYTHONPATH put ``site`` there too, so plugin discovery sees what an install registers."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    for package in packages:
        project = tomllib.loads((root / "packages" / package / "pyproject.toml").read_text())["project"]
        info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
        sections = [
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
            for group, entries in project.get("entry-points", {}).items()
            if groups is None or group in groups
        ]
        (info / "entry_points.txt").write_text("\n".join(sections))
    return site
