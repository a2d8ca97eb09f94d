"""Hypothesis profiles: `ci` (derandomized, no deadline) and `dev`.

Selected by HYPOTHESIS_PROFILE; CI=true selects `ci`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
