"""Write `expected.json`: calls under each corpus file and the decision
Claude Code's documentation gives for each, in default mode, with the file as
the project's `.claude/settings.json` and the project as working directory.

This script does not import metis: each expected decision comes from the
documented semantics (https://code.claude.com/docs/en/permissions, as
summarised in /work/shared/reference/claude-code-permissions.md), one
`basis` line per case. For every sampled allow, deny or ask rule it makes a
call the rule matches and one it does not. Cases where a file's other rules
change the outcome, and where metis is deliberately stricter, are set by hand
in OVERRIDES (each with its reason); `test_settings_corpus.py` checks every
case and that a stricter case is named by `stricter_than_claude_code`.

Run: python tests/data/settings-corpus/derive_expected.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PER_FILE = 14  # rules sampled per file (every deny and ask, then allows evenly)

# The built-in read-only commands (permissions docs, "Read-only commands").
READ_ONLY = {"ls", "cat", "echo", "pwd", "head", "tail", "grep", "find", "wc", "which", "diff"}
READ_ONLY |= {"stat", "du", "cd"}
READ_ONLY_GIT = {"status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "blame"}

DOC_BASH = "permissions docs, Bash: `:*` / trailing ` *` is a prefix with a word boundary"
DOC_EXACT = "permissions docs, Bash: a rule without a wildcard matches that exact command"
DOC_DEFAULT = "default mode asks for a call no rule allows (permission modes docs)"
DOC_DENY = "deny rules block in every mode; deny, then ask, then allow (permissions docs)"
DOC_READ = "Read/Grep/Glob need no permission inside the working directory (tools reference)"
DOC_EDIT = "Edit rules cover every editing tool; an edit no rule allows asks (permissions docs)"
DOC_WEB = "WebFetch(domain:h) matches that host only, not its subdomains (permissions docs)"
DOC_SKILL = "Skill(name) is an exact name (skills docs)"
DOC_MCP = "mcp__server__tool covers that one tool (permissions docs, MCP)"
DOC_BARE = "a bare tool name matches every use of the tool (permissions docs)"
DOC_MCP_SERVER = "mcp__server covers every tool of that server (permissions docs, MCP)"


def _call(tool: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool": tool, "input": tool_input}


def _bash(command: str) -> dict[str, Any]:
    return _call("Bash", command=command)


def _read_only(command: str) -> bool:
    words = command.split()
    if not words:
        return False
    if words[0] == "git":
        return len(words) > 1 and words[1] in READ_ONLY_GIT
    return words[0] in READ_ONLY


def _bash_cases(body: str, behavior: str) -> list[tuple[dict[str, Any], str, str]]:
    hit = "deny" if behavior == "deny" else ("ask" if behavior == "ask" else "allow")
    m = re.fullmatch(r"(.*?)(?::\*| \*)", body)
    if m is not None:  # a prefix rule
        prefix = m.group(1).replace("*", "apk")
        first, _, rest = prefix.partition(" ")
        miss = f"{first}zz {rest} corpusarg".replace("  ", " ")
        return [
            (_bash(f"{prefix} corpusarg"), hit, DOC_BASH),
            (_bash(miss), "ask", f"{DOC_BASH}; {DOC_DEFAULT}"),
        ]
    exact = body.replace("*", "x")
    if "*" in body:
        first, _, rest = body.partition(" ")
        miss = f"zz{first} {rest}".replace("*", "x").strip()
    else:
        miss = f"{body} corpus-extra"
    miss_expected = "allow" if _read_only(miss) else "ask"
    basis = "read-only command (permissions docs)" if miss_expected == "allow" else DOC_DEFAULT
    return [(_bash(exact), hit, DOC_EXACT), (_bash(miss), miss_expected, f"{DOC_EXACT}; {basis}")]


_PATH_SAMPLES = {
    "./.env": (".env", "corpus-notes.txt"),
    "./.env*": (".env.local", "corpus-notes.txt"),
    "./.env.*": (".env.production", "corpus-notes.txt"),
    "./secrets/**": ("secrets/key.txt", "src/corpus.txt"),
    "./config/credentials.json": ("config/credentials.json", "config/corpus.txt"),
    "**/*.json": ("pkg/a.json", "pkg/a.corpus"),
    "**/*.js": ("src/a.js", "src/a.corpus"),
    "**/*.ts": ("src/a.ts", "src/a.corpus"),
    "**/*.py": ("src/a.py", "src/a.corpus"),
    "**/*": ("src/a.txt", None),
    ".claude/rules/**": (".claude/rules/a.md", "docs/a.md"),
}


def _path_cases(tool: str, spec: str, behavior: str) -> list[tuple[dict[str, Any], str, str]]:
    inside, outside = _PATH_SAMPLES[spec]
    key = "file_path"
    out: list[tuple[dict[str, Any], str, str]] = []
    if tool == "Read":
        hit = behavior if behavior != "allow" else "allow"
        out.append((_call("Read", **{key: "{ws}/" + inside}), hit, f"{DOC_DENY}; {DOC_READ}"))
        if outside is not None:
            out.append((_call("Read", **{key: "{ws}/" + outside}), "allow", DOC_READ))
    else:
        hit = behavior if behavior != "allow" else "allow"
        call_tool = "Edit" if tool == "Edit" else tool
        args = {key: "{ws}/" + inside}
        if call_tool == "Edit":
            args |= {"old_string": "a", "new_string": "b"}
        else:
            args |= {"content": "x"}
        out.append((_call(call_tool, **args), hit, DOC_EDIT))
        if outside is not None:
            miss = dict(args, **{key: "{ws}/" + outside})
            out.append((_call(call_tool, **miss), "ask", f"{DOC_EDIT}; {DOC_DEFAULT}"))
    return out


_BARE_CALLS: dict[str, dict[str, Any]] = {
    "Bash": _bash("corpuscmd arg"),
    "Edit": _call("Edit", file_path="{ws}/a.txt", old_string="a", new_string="b"),
    "Write": _call("Write", file_path="{ws}/a.txt", content="x"),
    "MultiEdit": _call("MultiEdit", file_path="{ws}/a.txt", edits=[]),
    "Read": _call("Read", file_path="{ws}/a.txt"),
    "Glob": _call("Glob", pattern="**/*.py"),
    "Grep": _call("Grep", pattern="TODO"),
    "LS": _call("LS", path="{ws}"),
    "WebSearch": _call("WebSearch", query="corpus"),
    "WebFetch": _call("WebFetch", url="https://example.org/corpus", prompt="p"),
    "Skill": _call("Skill", skill="corpus-skill"),
}


def cases_for(rule: str, behavior: str) -> list[tuple[dict[str, Any], str, str]]:
    m = re.fullmatch(r"([A-Za-z_][\w-]*)(?:\((.*)\))?", rule, re.DOTALL)
    assert m is not None, rule
    tool, spec = m.group(1), m.group(2)
    hit = behavior
    if spec is None and tool.startswith("mcp__"):
        server = tool.split("__")[1]
        if tool.count("__") == 1:  # `mcp__server`: every tool of the server
            return [
                (_call(f"{tool}__corpus_tool"), hit, DOC_MCP_SERVER),
                (_call(f"{tool}zz__corpus_tool"), "ask", f"{DOC_MCP_SERVER}; {DOC_DEFAULT}"),
            ]
        return [
            (_call(tool), hit, DOC_MCP),
            (_call(f"mcp__{server}__corpus_other"), "ask", f"{DOC_MCP}; {DOC_DEFAULT}"),
        ]
    if spec is None:
        return [(_BARE_CALLS.get(tool, _call(tool)), hit, DOC_BARE)]
    if tool == "Bash":
        return _bash_cases(spec, behavior)
    if tool in ("Read", "Edit", "Write"):
        return _path_cases(tool, spec, behavior)
    if tool == "WebFetch":
        host = spec.removeprefix("domain:")
        return [
            (_call("WebFetch", url=f"https://{host}/corpus", prompt="p"), hit, DOC_WEB),
            (_call("WebFetch", url=f"https://corpus.{host}/", prompt="p"), "ask", DOC_WEB),
        ]
    if tool == "Skill":
        return [
            (_call("Skill", skill=spec), hit, DOC_SKILL),
            (_call("Skill", skill=f"{spec}-corpus"), "ask", f"{DOC_SKILL}; {DOC_DEFAULT}"),
        ]
    raise AssertionError(f"no sample for {rule}")


def sample(rules: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every deny and ask, every allow of a rarer form (bare tools, paths,
    MCP), and of the common forms (Bash, WebFetch, Skill) an even sample."""
    common = ("Bash(", "WebFetch(domain:", "Skill(")
    strict = [r for r in rules if r[1] != "allow" or not r[0].startswith(common)]
    allows = [r for r in rules if r[1] == "allow" and r[0].startswith(common)]
    room = max(PER_FILE - len(strict), 4)
    step = max(1, len(allows) // room)
    return strict + allows[::step][:room]


# (file, rule, call index) -> expected, basis, stricter reason or None.
# Each one was checked by hand against the docs named in its basis.
GIT_ALIAS = (
    "metis: a git word that is not a git command may be an alias (it runs anything), so a "
    "`Bash(git:*)` prefix never allows it; Claude Code's prefix rule does"
)
_PIPE = (
    "compound commands are split on `|` and each part must match on its own (permissions "
    "docs), so a rule naming a whole pipeline never matches; the parts ask (`{0}` reads a "
    "script from stdin)"
)
OVERRIDES: dict[tuple[str, str, int], tuple[str, str, str | None]] = {
    ("humanlayer.json", "Bash(bash hack/spec_metadata.sh)", 0): (
        "ask",
        DOC_EXACT,
        "metis: `bash FILE` runs a script the shell grammar cannot see through, so no rule "
        "allows it (specs/permissions.md, interpreter row)",
    ),
    ("claude-agent-sdk-python.json", "Bash(python -m pytest tests/)", 1): (
        "allow",
        "the file's own `Bash(python -m pytest tests/*)` matches it: `*` spans spaces "
        "(permissions docs, Bash)",
        None,
    ),
    ("my-claude-code-setup-local.json", "Bash(true)", 1): (
        "allow",
        "`true` has no effect: the read-only list is not exhaustive (permissions docs), and "
        "metis counts `true` in it (docs gap)",
        None,
    ),
    ("claude-flow.json", "Bash(curl * | bash)", 0): ("ask", _PIPE.format("bash"), None),
    ("claude-flow.json", "Bash(wget * | sh)", 0): ("ask", _PIPE.format("sh"), None),
}
OVERRIDES[("claude-plugins.json", "Edit(.claude/rules/**)", 0)] = (
    "ask",
    "`.claude` is a protected directory: protected paths are checked before allow rules, "
    "so no allow covers them (permission modes docs, protected paths)",
    None,
)
for _file in ("sentry-go.json", "sentry-dotnet.json", "sentry-python.json"):
    OVERRIDES[(_file, "Bash(git:*)", 0)] = ("ask", DOC_BASH, GIT_ALIAS)
OVERRIDES[("cct-development-mode.json", "Bash(git:*)", 0)] = ("ask", DOC_BASH, GIT_ALIAS)


def main() -> None:
    provenance = json.loads((HERE / "provenance.json").read_text(encoding="utf-8"))
    cases = []
    for entry in provenance["files"]:
        data = json.loads((HERE / entry["file"]).read_text(encoding="utf-8"))
        perms = data.get("permissions", {})
        rules = [(r, b) for b in ("deny", "ask", "allow") for r in perms.get(b, [])]
        bare_bash = "Bash" in perms.get("allow", [])
        for rule, behavior in sample(rules):
            for i, (call, expected, basis) in enumerate(cases_for(rule, behavior)):
                stricter = None
                if bare_bash and call["tool"] == "Bash" and i == 1:
                    expected, basis = "allow", f"the file allows bare `Bash`; {DOC_BARE}"
                key = (entry["file"], rule, i)
                if key in OVERRIDES:
                    expected, basis, stricter = OVERRIDES[key]
                cases.append(
                    {
                        "file": entry["file"],
                        "rule": rule,
                        "list": behavior,
                        "call": call,
                        "mode": "default",
                        "expected": expected,
                        "basis": basis,
                        "stricter": stricter,
                    }
                )
    out = {
        "about": "Calls under each corpus file and Claude Code's documented decision "
        "(derive_expected.py; {ws} is the project root).",
        "cases": cases,
    }
    (HERE / "expected.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(len(cases), "cases")


if __name__ == "__main__":
    main()
