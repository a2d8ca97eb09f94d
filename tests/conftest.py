"""Hypothesis profiles: `ci` (derandomized, no deadline) and `dev`.

Selected by HYPOTHESIS_PROFILE; CI=true selects `ci`.

Every test must leave the test process as it found it in one respect that once
broke other tests far away: it must not become an agent tree's root
(`guard_tree`: a subreaper in a cgroup of its own, `$METIS_TREE` set), or every
later `metis run` it starts believes it is a child agent and guards nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck
from hypothesis import settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=100,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("exhaustive", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# `metis run` reads the machine's settings hierarchy (~/.claude/settings.json,
# /etc/claude-code/...) by default; the tests, and the runs they start, must not
# depend on the machine. Tests of the hierarchy turn it back on.
os.environ["METIS_SETTINGS_HIERARCHY"] = "0"

# Likewise git's user-wide config: grep honours `core.excludesFile` (default
# ~/.config/git/ignore) and git commands read ~/.gitconfig. CI is a bare
# machine with neither, so every test sees an empty global config whose
# excludes file is empty too (tests of those files pass their own environment).
_GIT_HOME = tempfile.mkdtemp(prefix="metis-tests-git-")
open(os.path.join(_GIT_HOME, "ignore"), "w").close()
with open(os.path.join(_GIT_HOME, "config"), "w") as _config:
    _config.write(f"[core]\n\texcludesFile = {os.path.join(_GIT_HOME, 'ignore')}\n")
os.environ["GIT_CONFIG_GLOBAL"] = os.path.join(_GIT_HOME, "config")
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"


@pytest.fixture(autouse=True)
def _no_agent_tree_left_behind() -> Iterator[None]:
    yield
    process = sys.modules.get("metis_runtime.agents._process")
    guard = getattr(process, "_guard", None)
    assert not guard, (
        "this test made the test process an agent tree's root (guard_tree); "
        "run metis in a subprocess or restore metis_cli._run.STANDALONE"
    )


@pytest.fixture
def no_live_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider API key in the environment: a `metis run` in process cannot
    reach a live model (use with `pytest.mark.usefixtures`)."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
