"""The shell word expander (`metis_runtime/shell/_expand.py`) against real
bash: every word it claims to know expands as bash expands it (brace
expansion, `~`, `$HOME`, variables, quoting, word splitting)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime.shell._expand import Values
from metis_runtime.shell._expand import assigned_value
from metis_runtime.shell._expand import expand_word
from metis_runtime.shell._expand import unescape_glob

BASH = shutil.which("bash")
HOME = "/h/me"
VARS: dict[str, str] = {"f": "~/.ssh/id_rsa", "g": "a b", "e": "", "s": "x*"}


def _lookup(name: str) -> Values | None:
    return ((VARS[name],), True) if name in VARS else None


def _bash_words(word: str, cwd: Path) -> list[str] | None:
    assert BASH is not None
    env = {"HOME": HOME, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **VARS}
    env["f"] = HOME + "/.ssh/id_rsa"  # assigned as f=~/.ssh/id_rsa: bash expanded the ~
    got = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", f"set -f; printf '%s\\0' START {word}"],
        capture_output=True, cwd=cwd, env=env, timeout=10, check=False,
    )  # fmt: skip
    if got.returncode != 0 or got.stderr:
        return None
    return got.stdout.decode("utf-8", "surrogateescape").split("\0")[1:-1]


def _ours(word: str) -> list[str] | None:
    found = expand_word(word, _lookup)
    if found is None:
        return None
    expansion, complete = found
    assert complete
    out = []
    for w in expansion.words:
        text = unescape_glob(w) if expansion.globbed else w
        if text == "~" or text.startswith("~/"):
            text = HOME + text[1:]
        elif text.startswith("./~"):
            text = text[2:]
        out.append(text)
    return out


CASES = [
    ("~/.ssh/{id_rsa,config}", [HOME + "/.ssh/id_rsa", HOME + "/.ssh/config"]),
    ("$HOME/.ssh/id_rsa", [HOME + "/.ssh/id_rsa"]),
    ("${HOME}/.ssh/id_rsa", [HOME + "/.ssh/id_rsa"]),
    ('"$HOME"/.ssh/id_rsa', [HOME + "/.ssh/id_rsa"]),
    (".e{m..o}v", [".emv", ".env", ".eov"]),
    ("$f", [HOME + "/.ssh/id_rsa"]),
    ("$g", ["a", "b"]),
    ('"$g"', ["a b"]),
    ("{01..03}", ["01", "02", "03"]),
    ("x{,}", ["x", "x"]),
]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize(("word", "expected"), CASES)
def test_known_words_expand_as_bash_does(word: str, expected: list[str], tmp_path: Path) -> None:
    assert _bash_words(word, tmp_path) == expected
    assert _ours(word) == expected


@pytest.mark.parametrize(
    "word", ["$(cat x)", "`x`", "${f:-y}", "$1", "$unknown", "$'x'", "${HOME}x"]
)
def test_run_time_words_are_unknown(word: str) -> None:
    assert expand_word(word, _lookup) is None


def test_assignment_values() -> None:
    assert assigned_value("~/.ssh/id_rsa", _lookup) == (("~/.ssh/id_rsa",), True)
    assert assigned_value("{a,b}", _lookup) == (("{a,b}",), True)  # no brace expansion
    assert assigned_value("$(pwd)", _lookup) is None


_TOKENS = st.sampled_from(
    ["a", "b", ".", "/", "-", "_", "{", "}", ",", "..", "1", "3", "0", "'x y'", '"q"', "''",
     '""', "$f", "${f}", "$g", '"$g"', "$e", '"$e"', "$HOME", "~", "*", "\\*", "\\{", "c"]
)  # fmt: skip


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_TOKENS, min_size=1, max_size=7))
def test_expander_agrees_with_bash(parts: list[str], tmp_path: Path) -> None:
    """Whatever the expander claims to know (it may say unknown), bash agrees."""
    word = "".join(parts)
    ours = _ours(word)
    if ours is None:
        return
    assert _bash_words(word, tmp_path) == ours, word


@pytest.mark.parametrize(
    ("command", "words", "complete"),
    [
        ("f=a; cat $f", ("a",), True),
        ("f=a && cat $f", ("a",), True),
        ("true && f=a; cat $f", ("a",), False),  # may not have run
        ("(f=a); cat $f", ("a",), False),  # a subshell's assignment stays there
        ("f=a | cat $f", ("a",), False),
        ("if x; then f=a; fi; cat $f", ("a",), False),
        ("f=a; f=b; cat $f", ("b",), True),
        ("export f=~/x; cat $f", ("~/x",), True),
        ("f=a; g=$f/b; cat $g", ("a/b",), True),
        ('f="a b"; cat $f', ("a", "b"), True),
        ("for f in a b; do cat $f; done", ("a", "b"), True),
        ("cat $PWD/x", ("./x",), True),
    ],
)
def test_same_line_variables(command: str, words: tuple[str, ...], complete: bool) -> None:
    from metis_runtime.shell import analyze_command

    (cat,) = [c for c in analyze_command(command).commands if c.argv[:1] == ("cat",)]
    expansion = cat.expansion(1)
    assert expansion is not None
    assert (expansion.words, expansion.complete) == (words, complete)


@pytest.mark.parametrize("command", ["f=a; read f; cat $f", "f=$(pwd); cat $f", "cat $g"])
def test_variables_set_at_run_time_are_unknown(command: str) -> None:
    from metis_runtime.shell import analyze_command

    (cat,) = [c for c in analyze_command(command).commands if c.argv[:1] == ("cat",)]
    assert cat.expansion(1) is None


def test_assigning_home_makes_the_line_opaque() -> None:
    from metis_runtime.shell import analyze_command

    assert analyze_command("HOME=~/.ssh; cat ~/id_rsa").opaque
    assert not analyze_command("HOME=/tmp/h make").opaque  # a command's environment only
