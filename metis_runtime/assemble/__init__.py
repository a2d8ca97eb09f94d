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

from ._assembly import Assembly, run_to_end
from ._parts import (
    dispatcher,
    make_loop,
    make_registry,
    make_supervisor,
    recorded_budget,
    recorded_call_timeout,
    recorded_limits,
    recorded_mcp_sources,
    start_mcp_servers,
)
from ._provider import (
    BASE_URL_ENV,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODELS,
    PROVIDERS,
    check_provider_config,
    child_provider,
    live_config,
    live_provider_config,
    pass_env,
    root_provider,
)
from ._resume import Reopened, assemble_resume, reopen_run
from ._scenario import (
    STDIN,
    STDIN_SCENARIO,
    Extras,
    Prepared,
    git_init,
    keep_stdin_scenario,
    open_workspace,
    prepare_run,
    read_scenario,
    scenario_extras,
    seed_workspace,
)
from ._settings import (
    AGENT_EXEC_TOOLS,
    Say,
    journal_path,
    latest_trace,
    make_gate,
    owned_files,
    read_settings,
    run_mode,
    settings_meta,
)
from ._start import Placed, Request, assemble_run, place_run

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
