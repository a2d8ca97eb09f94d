"""Environment variables that hold paths and settings, never secrets: the
detector does not treat their values as credentials, however their names
read (`PWD` ends like the `pwd` of a password field).

Sources, each a published list of what the variables mean:

- POSIX: IEEE Std 1003.1-2024, Base Definitions, chapter 8 "Environment
  Variables" (8.2 internationalization variables, 8.3 other environment
  variables), https://pubs.opengroup.org/onlinepubs/9799919799/basedefs/V1_chap08.html;
- the XDG Base Directory Specification 0.8,
  https://specifications.freedesktop.org/basedir-spec/latest/;
- GitHub Actions' default environment variables ("Store information in
  variables", "Default environment variables"),
  https://docs.github.com/en/actions/reference/variables-reference
  (its list holds no credential: `GITHUB_TOKEN` is a secret, not a default
  variable, and stays redacted).

Names are matched exactly, upper case as those lists write them: a
lower-case `pwd` field in a config file is still a password.
"""

from __future__ import annotations

__all__ = ["PLAIN_VARIABLES"]

_POSIX = frozenset(
    {
        *("ARFLAGS", "CC", "CDPATH", "CFLAGS", "CHARCLASS", "COLUMNS", "DATEMSK", "DEAD"),
        *("EDITOR", "ENV", "EXINIT", "FC", "FCEDIT", "FFLAGS", "GET", "GFLAGS", "HISTFILE"),
        *("HISTORY", "HISTSIZE", "HOME", "IFS", "LANG", "LC_ALL", "LC_COLLATE", "LC_CTYPE"),
        *("LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC", "LC_TIME", "LDFLAGS", "LEX", "LFLAGS"),
        *("LINENO", "LINES", "LISTER", "LOGNAME", "LPDEST", "MAIL", "MAILCHECK", "MAILER"),
        *("MAILPATH", "MAILRC", "MAKEFLAGS", "MAKESHELL", "MANPATH", "MBOX", "MORE"),
        *("MSGVERB", "NLSPATH", "NPROC", "OLDPWD", "OPTARG", "OPTERR", "OPTIND", "PAGER"),
        *("PATH", "PPID", "PRINTER", "PROCLANG", "PROJECTDIR", "PS1", "PS2", "PS3", "PS4"),
        *("PWD", "RANDOM", "SECONDS", "SHELL", "TERM", "TERMCAP", "TERMINFO", "TMPDIR"),
        *("TZ", "USER", "VISUAL", "YACC", "YFLAGS"),
    }
)
_XDG = frozenset(
    {
        *("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_DIRS"),
        *("XDG_CONFIG_DIRS", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"),
    }
)
_GITHUB_ACTIONS = frozenset(
    {
        *("CI", "GITHUB_ACTION", "GITHUB_ACTION_PATH", "GITHUB_ACTION_REPOSITORY"),
        *("GITHUB_ACTIONS", "GITHUB_ACTOR", "GITHUB_ACTOR_ID", "GITHUB_API_URL"),
        *("GITHUB_BASE_REF", "GITHUB_ENV", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH"),
        *("GITHUB_GRAPHQL_URL", "GITHUB_HEAD_REF", "GITHUB_JOB", "GITHUB_OUTPUT", "GITHUB_PATH"),
        *("GITHUB_REF", "GITHUB_REF_NAME", "GITHUB_REF_PROTECTED", "GITHUB_REF_TYPE"),
        *("GITHUB_REPOSITORY", "GITHUB_REPOSITORY_ID", "GITHUB_REPOSITORY_OWNER"),
        *("GITHUB_REPOSITORY_OWNER_ID", "GITHUB_RETENTION_DAYS", "GITHUB_RUN_ATTEMPT"),
        *("GITHUB_RUN_ID", "GITHUB_RUN_NUMBER", "GITHUB_SERVER_URL", "GITHUB_SHA"),
        *("GITHUB_STEP_SUMMARY", "GITHUB_TRIGGERING_ACTOR", "GITHUB_WORKFLOW"),
        *("GITHUB_WORKFLOW_REF", "GITHUB_WORKFLOW_SHA", "GITHUB_WORKSPACE", "RUNNER_ARCH"),
        *("RUNNER_DEBUG", "RUNNER_ENVIRONMENT", "RUNNER_NAME", "RUNNER_OS", "RUNNER_TEMP"),
        "RUNNER_TOOL_CACHE",
    }
)
PLAIN_VARIABLES: frozenset[str] = _POSIX | _XDG | _GITHUB_ACTIONS
