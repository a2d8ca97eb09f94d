"""The assembly of a run: what `metis run` builds before its loop starts.

A new run is assembled in three steps, so that a witness can start between
them (it must watch before anything of the run is written): `prepare_run`
(the scenario read, the workspace made and seeded), `place_run` (the trace,
journal and agent tree), `assemble_run` from the options (a `Request`:
settings and gate, provider, MCP servers, agent tree, registry, trace header
and journal). A resume has two: `reopen_run` and `assemble_resume`. Either
gives an `Assembly`, whose `loop` `run_to_end` drives.

Bad input (a scenario, workspace, setting or recorded config that cannot be
used) is a `ConfigError` whose message is one line; the command maps it to
its own error line and exit code. What the user should see on the way (a
lost rule, an agent definition or manifest refused, the MCP servers started)
goes to the `warn` and `info` callables the caller passes.
"""

from ._assembly import Assembly
from ._assembly import run_to_end
from ._parts import dispatcher
from ._parts import make_loop
from ._parts import make_registry
from ._parts import make_supervisor
from ._parts import recorded_budget
from ._parts import recorded_call_timeout
from ._parts import recorded_limits
from ._parts import recorded_mcp_sources
from ._parts import start_mcp_servers
from ._provider import BASE_URL_ENV
from ._provider import DEFAULT_MAX_RETRIES
from ._provider import DEFAULT_MODELS
from ._provider import PROVIDERS
from ._provider import check_provider_config
from ._provider import child_provider
from ._provider import live_config
from ._provider import live_provider_config
from ._provider import pass_env
from ._provider import root_provider
from ._resume import Reopened
from ._resume import assemble_resume
from ._resume import reopen_run
from ._scenario import STDIN
from ._scenario import STDIN_SCENARIO
from ._scenario import Extras
from ._scenario import Prepared
from ._scenario import git_init
from ._scenario import keep_stdin_scenario
from ._scenario import open_workspace
from ._scenario import prepare_run
from ._scenario import read_scenario
from ._scenario import scenario_extras
from ._scenario import seed_workspace
from ._settings import AGENT_EXEC_TOOLS
from ._settings import Say
from ._settings import journal_path
from ._settings import latest_trace
from ._settings import make_gate
from ._settings import owned_files
from ._settings import read_settings
from ._settings import run_mode
from ._settings import settings_meta
from ._start import Placed
from ._start import Request
from ._start import assemble_run
from ._start import place_run

__all__ = [
    "AGENT_EXEC_TOOLS",
    "BASE_URL_ENV",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODELS",
    "PROVIDERS",
    "STDIN",
    "STDIN_SCENARIO",
    "Assembly",
    "Extras",
    "Placed",
    "Prepared",
    "Reopened",
    "Request",
    "Say",
    "assemble_resume",
    "assemble_run",
    "check_provider_config",
    "child_provider",
    "dispatcher",
    "git_init",
    "journal_path",
    "keep_stdin_scenario",
    "latest_trace",
    "live_config",
    "live_provider_config",
    "make_gate",
    "make_loop",
    "make_registry",
    "make_supervisor",
    "open_workspace",
    "owned_files",
    "pass_env",
    "place_run",
    "prepare_run",
    "read_scenario",
    "read_settings",
    "recorded_budget",
    "recorded_call_timeout",
    "recorded_limits",
    "recorded_mcp_sources",
    "reopen_run",
    "root_provider",
    "run_mode",
    "run_to_end",
    "scenario_extras",
    "seed_workspace",
    "settings_meta",
    "start_mcp_servers",
]
