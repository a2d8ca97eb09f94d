"""The Read-marker protocol: five replay model conditions (and live models
when API keys are set), each trial checked for closure of unique ids, the
marker in the tool result and the marker in the final text."""

from ._protocol import LIVE
from ._protocol import TASK
from ._protocol import ConditionResult
from ._protocol import LiveCondition
from ._protocol import Trial
from ._protocol import read_marker_study
from ._protocol import read_marker_study_async
from ._protocol import replay_marker
from ._protocol import run_trial
from ._wire import CONDITIONS
from ._wire import MARKER_FILE
from ._wire import Condition
from ._wire import final_text

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
