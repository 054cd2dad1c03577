"""Oracle fixtures: the real pi, sessions from tests/generate.py, and pi's answers about every static
file (generated, hand-written, pi's v1 fixture) from one node process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.generate import generate
from tests.oracle.oracle import (
    GENERATED,
    LARGE,
    LARGE_INDEXES,
    MISSING,
    OWN,
    PiOracle,
    StaticFile,
    entry_objects,
    interesting_leaves,
    read_lines,
)
from tests.paths import HANDMADE


@pytest.fixture(scope="session")
def pi_oracle(pi_install: Path) -> PiOracle:
    return PiOracle(pi_install)


@pytest.fixture(scope="session")
def generated_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("generated")
    files = {}
    for name, options in GENERATED.items():
        out = folder / f"{name}.jsonl"
        out.write_bytes(generate(**options))
        files[name] = out
    return files


@pytest.fixture(scope="session")
def static_files(generated_files: dict[str, Path], pi_oracle: PiOracle) -> dict[str, StaticFile]:
    """Every static file with pi's answers, all from a single node process."""
    paths = {**generated_files, **{name: HANDMADE / name for name in OWN}, "large-session": LARGE}
    files: dict[str, StaticFile] = {}
    jobs = []
    for name, path in paths.items():
        data = path.read_bytes()
        lines = read_lines(data)
        version = int(lines[0].get("version", 1))
        entries = [o for o in lines if o.get("type") != "session"]
        if version == 1:
            leaves: list[str] = []
            indexes = LARGE_INDEXES if name == "large-session" else list(range(len(entries)))
        else:
            small = len(entries) <= 100
            leaves = [e["id"] for e in entries] if small else interesting_leaves(entry_objects(data), seed=len(name))
            leaves.append(MISSING)
            indexes = []
        files[name] = StaticFile(path, data, version, leaves, indexes, {})
        jobs.append({"file": str(path), "leaves": leaves, "leafIndexes": indexes, "tree": True, "info": True,
                     "text": version < 3})  # fmt: skip
    for (name, static), result in zip(files.items(), pi_oracle.batch_parallel(jobs), strict=True):
        static.pi = result
        assert result["rewritten"] == (static.version < 3), name
    return files
