"""requirements-lock.txt (what `make setup` installs, with --no-deps) against requirements.txt (the
direct requirements) and requirements-colab.txt (the Colab cell's pins): every direct requirement
is pinned in the lock at a version that satisfies it, every line is one exact pin, torch is
requirements.txt's own line (the CPU build where the local wheel exists), and the Colab pins are
the lock's versions."""

from __future__ import annotations

import re

from packaging.requirements import Requirement
from packaging.version import Version

from specdec_lib import ROOT
from specdec_study.environment import colab

LOCK = ROOT / "requirements-lock.txt"


def pins(path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in colab.requirement_lines(path):
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[^\s=;<>!~]+", line), line
        name, _, version = line.partition("==")
        assert colab._name(name) not in out, f"{name} is pinned twice in {path.name}"
        out[colab._name(name)] = version
    return out


def test_every_direct_requirement_is_pinned_in_the_lock_at_a_version_it_allows():
    lock = pins(LOCK)
    for line in colab.requirement_lines():
        req = Requirement(line)
        name = colab._name(req.name)
        assert name in lock, f"{name} (requirements.txt) is not in requirements-lock.txt"
        assert req.specifier.contains(Version(lock[name]), prereleases=True), (
            f"requirements-lock.txt pins {name}=={lock[name]}, requirements.txt asks {req}"
        )


def test_the_lock_keeps_requirements_torch_line():
    torch = [ln for ln in colab.requirement_lines() if colab._name(Requirement(ln).name) == "torch"]
    assert torch and torch[0] in colab.requirement_lines(LOCK)


def test_the_colab_pins_are_the_locks_versions():
    lock = pins(LOCK)
    for name, version in colab.locked().items():
        got = lock.get(name)
        assert got == version, f"requirements-colab.txt {name}=={version}, the lock {got}"
