"""The Read-marker protocol: five replay model conditions (and live models
when API keys are set), each trial checked for closure of unique ids, the
marker in the tool result and the marker in the final text."""

from ._protocol import (
    LIVE,
    TASK,
    ConditionResult,
    LiveCondition,
    Trial,
    read_marker_study,
    read_marker_study_async,
    replay_marker,
    run_trial,
)
from ._wire import CONDITIONS, MARKER_FILE, Condition, final_text

__all__ = [
    "CONDITIONS",
    "LIVE",
    "MARKER_FILE",
    "TASK",
    "Condition",
    "ConditionResult",
    "LiveCondition",
    "Trial",
    "final_text",
    "read_marker_study",
    "read_marker_study_async",
    "replay_marker",
    "run_trial",
]
