"""The reference fact-deriver (AUTH-4): what it is sure of, what it leaves
alone, and the properties that keep it one-sided."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_check import check_trace
from metis_check import simulate
from metis_check._mutate import RICH
from metis_check._mutate import break_trace
from metis_check._tree import dropped_rules
from metis_model._derive import Recorded
from metis_model._derive import derive
from metis_model._derive import recorded_permissions
from metis_model._derive_shell import bash_rule_matches
from metis_model._derive_shell import split_line
from metis_trace import TraceHeader

WS = "/ws"


def _recorded(*rules: tuple[str, str], auto: bool = False, base: str | None = None) -> Recorded:
    meta = {
        "workspace": WS,
        "home": "/home/u",
        "roots": [WS, "/extra"],
        "protected": ["/ws/run.jsonl"],
        "auto": auto,
        "rules": [
            {"behavior": b, "source": "project", "pattern": p, "recency": i, "base": base}
            for i, (b, p) in enumerate(rules, 1)
        ],
    }
    got = recorded_permissions(TraceHeader(run_id="r", root_run_id="r", meta={"permissions": meta}))
    assert got is not None
    return got


def _patterns(
    recorded: Recorded, tool: str, input: dict[str, Any], footprint: set[str]
) -> set[str]:
    return {r.pattern for r in derive(recorded, tool, input, footprint).rules}


@pytest.mark.parametrize(
    ("rule", "path", "matches"),
    [
        ("Read(//etc/**)", "/etc/passwd", True),
        ("Read(//etc/**)", "/ws/etc/passwd", False),
        ("Read(~/.ssh/**)", "/home/u/.ssh/id_rsa", True),
        ("Read(/config/*.json)", "/conf/config/a.json", True),  # the settings file's root
        ("Read(/config/*.json)", "/ws/config/a.json", False),
        ("Read(./src/*.py)", "/ws/src/a.py", True),
        ("Read(./src/*.py)", "/ws/src/sub/a.py", False),  # `*` stays within a segment
        ("Read(src/**/*.py)", "/ws/src/sub/a.py", True),
        ("Read(.env)", "/ws/deep/er/.env", True),  # a bare name at any depth
        ("Read(.env)", "/elsewhere/.env", True),  # deny and ask: anywhere
        ("Read(secrets/**)", "/other/secrets/k", True),  # one directory: any depth
        ("Read(src)", "/ws/src/a.py", True),  # a match covers what lies below
        ("Read(docs/a.md)", "/ws/docs/a.md", True),
        ("Read(docs/a.md)", "/x/docs/a.md", False),
        ("Read([ab].txt)", "/ws/a.txt", False),  # a class: not read, says nothing
    ],
)
def test_path_rules_anchor_as_documented(rule: str, path: str, matches: bool) -> None:
    recorded = _recorded(("deny", rule), base="/conf")
    assert (_patterns(recorded, "read", {"path": path}, {path}) == {rule}) is matches


def test_a_path_counts_only_where_the_footprint_names_it() -> None:
    """A symlink or an alias between the name and the file: nothing is sure."""
    recorded = _recorded(("deny", "Read(.env)"), ("deny", "Read"))
    assert _patterns(recorded, "read", {"path": ".env"}, {"/ws/.env"}) == {"Read(.env)", "Read"}
    got = derive(recorded, "read", {"path": ".env"}, {"/ws/notes.txt"})
    assert {r.pattern for r in got.rules} == {"Read"} and not got.secret
    outside = derive(recorded, "read", {"path": "/etc/hosts"}, {"/etc/hosts"})
    assert outside.out_of_scope
    assert not derive(recorded, "read", {"path": "/extra/a"}, {"/extra/a"}).out_of_scope


def test_protected_and_secret_for_file_tools() -> None:
    r = _recorded()
    assert derive(r, "write", {"path": ".git/config"}, {"/ws/.git/config"}).protected
    assert not derive(r, "read", {"path": ".git/config"}, {"/ws/.git/config"}).protected
    assert derive(r, "edit", {"path": "run.jsonl"}, {"/ws/run.jsonl"}).protected
    kept = "/ws/.claude/worktrees/w/a.py"
    assert not derive(r, "write", {"path": kept}, {kept}).protected
    assert derive(r, "read", {"path": "k/id_rsa"}, {"/ws/k/id_rsa"}).secret
    assert not derive(r, "read", {"path": ".env.example"}, {"/ws/.env.example"}).secret


def test_parameter_rules_are_not_derived() -> None:
    """`Read(offset:5)` and `Bash(timeout:30)` name input fields, not paths or
    commands; the legacy `Bash(git:*)` is a command prefix."""
    r = _recorded(("deny", "Read(offset:5)"), ("deny", "Bash(timeout:30)"), ("deny", "Bash(git:*)"))
    assert _patterns(r, "read", {"path": "offset:5"}, {"/ws/offset:5"}) == set()
    assert _patterns(r, "bash", {"command": "timeout:30"}, set()) == set()
    assert _patterns(r, "bash", {"command": "git status"}, set()) == {"Bash(git:*)"}


def test_allow_rules_only_bare_and_never_under_auto() -> None:
    r = _recorded(("allow", "Read"), ("allow", "Read(src/**)"))
    assert _patterns(r, "grep", {}, {WS}) == {"Read"}
    auto = _recorded(("allow", "Read"), auto=True)
    assert _patterns(auto, "read", {"path": "a"}, {"/ws/a"}) == set()


@pytest.mark.parametrize(
    ("line", "rule", "matches"),
    [
        ("rm -rf build", "rm:*", True),
        ("ls && rm -rf build", "rm:*", True),  # every part, not the first only
        ("timeout 5 nohup rm x", "rm:*", True),  # documented wrappers stripped
        ("FOO=1 rm x", "rm:*", True),  # deny sees past any assignment
        ("ls | xargs rm", "rm:*", True),  # bare xargs
        ("/bin/rm -f a", "rm:*", True),
        ("rmdir x", "rm:*", False),  # ` *` is a word boundary
        ("lsof", "ls *", False),
        ("lsof", "ls*", True),
        ("git push origin main", "git push *", True),
        ("git push", "git push *", True),
        ("git  push", "git push", True),  # whitespace runs are one space
        ("echo hi", "echo hi", True),
        ("echo hi there", "echo hi", False),  # exact
        ("pip install x", "*install*", True),
        ("xargs -0 rm", "rm:*", False),  # an xargs with options is not stripped
        ("echo $(rm x)", "rm:*", False),  # unsure: says nothing
        ("bash -c 'rm x'", "rm:*", False),
        ("echo 'a && rm x'", "rm:*", False),
    ],
)
def test_bash_rules_per_simple_command(line: str, rule: str, matches: bool) -> None:
    recorded = _recorded(("deny", f"Bash({rule})"))
    assert bool(_patterns(recorded, "bash", {"command": line}, set())) is matches


def test_bash_files_and_redirects() -> None:
    r = _recorded(("ask", "Read(.env)"), ("deny", "Edit(docs/**)"), ("deny", "Bash"))
    assert _patterns(r, "bash", {"command": "cat .env"}, set()) == {"Read(.env)", "Bash"}
    assert _patterns(r, "bash", {"command": "echo x >> docs/a.md"}, set()) == {
        "Edit(docs/**)",
        "Bash",
    }
    assert _patterns(r, "bash", {"command": "cd x && cat .env"}, set()) == {"Bash"}
    assert derive(r, "bash", {"command": "echo x > .git/config"}, set()).protected
    # A stderr redirection writes its file too (`_derive_shell.surely_writes`).
    assert derive(r, "bash", {"command": "echo x 2> .git/config"}, set()).protected
    assert derive(r, "bash", {"command": "cat <> .git/config"}, set()).protected
    assert not derive(r, "bash", {"command": "cd x && cat <> .git/config"}, set()).protected
    assert not derive(r, "bash", {"command": "echo x > /dev/null"}, set()).protected
    assert _patterns(r, "bash", {"command": "$(whatever"}, set()) == {"Bash"}


@given(st.text(max_size=80))
def test_the_tokenizer_never_raises(line: str) -> None:
    split_line(line)


@given(
    line=st.text(alphabet="rm -f|&;\n>xa'\"=", max_size=40),
    spec=st.text(alphabet="rm *:x-", min_size=1, max_size=8),
)
def test_split_commands_are_plain_words(line: str, spec: str) -> None:
    """Every command has words, none blank or holding a blank; an unquoted
    operator never ends up inside one (a quoted one may: `';'` is a word)."""
    commands = split_line(line)
    for c in commands or ():
        assert c.argv and all(w and not any(ch.isspace() for ch in w) for w in c.argv)
        bash_rule_matches(spec, c)
    if commands is not None and "'" not in line and '"' not in line:
        assert all(w not in ("&&", "||", ";", "|", "&") for c in commands for w in c.argv)


_RULES = st.lists(
    st.tuples(
        st.sampled_from(["deny", "ask", "allow"]),
        st.sampled_from(
            ["Bash", "Bash(rm:*)", "Read", "Read(.env)", "Edit(src/**)", "Read(//etc/**)", "Write"]
        ),
    ),
    max_size=5,
)
_CALLS = st.sampled_from(
    [
        ("bash", {"command": "rm -rf src && cat .env > src/x"}),
        ("read", {"path": ".env"}),
        ("write", {"path": "src/.git/x"}),
        ("grep", {}),
        ("read", {"path": "/etc/passwd"}),
        ("read", {"path": 7}),
        ("bash", {"command": ["not", "text"]}),
        ("mcp__x__y", {"path": ".env"}),
    ]
)


@given(rules=_RULES, more=_RULES, call=_CALLS)
def test_more_rules_never_take_a_derived_fact_away(
    rules: list[tuple[str, str]], more: list[tuple[str, str]], call: tuple[str, dict[str, Any]]
) -> None:
    """Monotone: the deriver only adds facts as settings grow, and every rule
    it derives is one the header records."""
    tool, input = call
    footprint = {"/ws/.env", "/ws/src/.git/x", WS, "/etc/passwd"}
    small, big = _recorded(*rules), _recorded(*rules, *more)
    a, b = derive(small, tool, input, footprint), derive(big, tool, input, footprint)
    assert {(r.behavior, r.pattern) for r in a.rules} <= {(r.behavior, r.pattern) for r in b.rules}
    assert (a.protected, a.secret, a.out_of_scope) == (b.protected, b.secret, b.out_of_scope)
    assert a.rules <= {r.ref for r in small.rules}


def test_a_header_without_the_record_exercises_nothing() -> None:
    header, events = simulate(3, RICH)
    old = header.model_copy(update={"meta": {}})
    assert recorded_permissions(old) is None
    broken = None
    for seed in range(50):
        broken = break_trace(events, "AUTH-4", __import__("random").Random(seed))
        if broken is not None:
            break
    assert broken is not None
    assert check_trace(broken, header).first.invariant == "AUTH-4"  # type: ignore[union-attr]
    report = check_trace(broken, old)
    assert report.ok and "AUTH-4" not in report.checks
    bad = header.model_copy(update={"meta": {"permissions": {"workspace": "relative"}}})
    assert recorded_permissions(bad) is None


def test_child_2_a_child_keeps_every_deny_and_ask_of_its_parent() -> None:
    def header(*rules: tuple[str, str]) -> TraceHeader:
        meta = {
            "workspace": WS,
            "home": "/h",
            "roots": [WS],
            "protected": [],
            "rules": [
                {"behavior": b, "source": "project", "pattern": p, "recency": i}
                for i, (b, p) in enumerate(rules)
            ],
        }
        return TraceHeader(run_id="r", root_run_id="r", meta={"permissions": meta})

    parent = header(("deny", "Bash(rm:*)"), ("ask", "Read(.env)"), ("allow", "Read"))
    assert dropped_rules(parent, header(("ask", "Read(.env)"), ("deny", "Bash(rm:*)"))) == []
    assert dropped_rules(parent, header(("deny", "Bash(rm:*)"))) == ["ask Read(.env) (project)"]
    assert dropped_rules(parent, TraceHeader(run_id="c", root_run_id="r")) == []


def test_an_unrecorded_header_is_a_note_not_a_pass() -> None:
    header, events = simulate(3, RICH)
    old = header.model_copy(update={"meta": {}})
    noted = check_trace(events, old)
    assert noted.ok and any("AUTH-4 was not checked" in n.message for n in noted.notes)
    assert check_trace(events, old, reference=True).notes == noted.notes
    assert not check_trace(events, header).notes
