"""`.ci/system-deps` on a machine whose packages are missing (issue 24): a
fake `apt-get` and `id` on a PATH of their own record what the script asks.
`apt-get install` comes first; `apt-get update` only when it fails, and the
install is retried whatever the update did; what is still missing is one
line a package, with the reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "system-deps"
BASH = "/bin/bash"

_APT = """#!/bin/bash
echo "$1" >> "$LOG"
case "$1" in
  update) [ "$UPDATE" = ok ] && : > "$STATE/updated"; [ "$UPDATE" = ok ] ;;
  install)
    if [ "$INSTALL" = ok ] || { [ "$INSTALL" = after-update ] && [ -e "$STATE/updated" ]; } \\
       || { [ "$INSTALL" = second ] && [ -e "$STATE/tried" ]; }; then
      for p in "$@"; do case "$p" in graphviz) n=dot;; strace) n=strace;; chromium) n=chromium;; *) continue;; esac
        printf '#!/bin/bash\\n' > "$BIN/$n"; /bin/chmod +x "$BIN/$n"; done
      exit 0
    fi
    : > "$STATE/tried"; exit 100 ;;
esac
"""


def _run(
    tmp_path: Path, *, install: str, update: str = "ok", root: bool = True, apt: bool = True
) -> tuple[list[str], list[str]]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    if apt:
        (bin_dir / "apt-get").write_text(_APT)
        (bin_dir / "apt-get").chmod(0o755)
    (bin_dir / "id").write_text(f"#!/bin/bash\necho {0 if root else 1000}\n")
    (bin_dir / "id").chmod(0o755)
    log = tmp_path / "apt.log"
    env = {
        "PATH": str(bin_dir),
        "LOG": str(log),
        "STATE": str(state),
        "BIN": str(bin_dir),
        "INSTALL": install,
        "UPDATE": update,
    }
    out = subprocess.run(
        [BASH, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stderr == ""
    calls = log.read_text().split() if log.exists() else []
    return calls, out.stdout.splitlines()


pytestmark = pytest.mark.skipif(not os.path.exists(BASH), reason="needs bash")


def test_install_first_and_no_update_when_it_works(tmp_path: Path) -> None:
    calls, lines = _run(tmp_path, install="ok")
    assert calls == ["install"] and lines == []


def test_update_only_after_a_failed_install_then_install_again(tmp_path: Path) -> None:
    calls, lines = _run(tmp_path, install="after-update")
    assert calls == ["install", "update", "install"] and lines == []


def test_a_failed_update_never_skips_the_install(tmp_path: Path) -> None:
    calls, lines = _run(tmp_path, install="second", update="fail")
    assert calls == ["install", "update", "install"]
    assert lines == ["note: apt-get update failed; installing from the package lists already here"]


def test_what_is_still_missing_is_one_line_each_with_why(tmp_path: Path) -> None:
    calls, lines = _run(tmp_path, install="never", update="fail")
    assert calls == ["install", "update", "install"]
    warnings = [line for line in lines if line.startswith("warning:")]
    assert [w.split()[1] for w in warnings] == ["graphviz", "strace", "chromium"]
    assert all("apt-get install failed" in w for w in warnings)
    assert "browser test will fail" in warnings[2]


@pytest.mark.parametrize(
    ("root", "apt", "why"), [(False, True, "not root"), (True, False, "no apt-get")]
)
def test_not_root_or_no_apt_says_so_and_installs_nothing(
    tmp_path: Path, root: bool, apt: bool, why: str
) -> None:
    calls, lines = _run(tmp_path, install="ok", root=root, apt=apt)
    assert calls == [] and len(lines) == 3 and all(why in line for line in lines)


def test_nothing_is_asked_when_everything_is_there(tmp_path: Path) -> None:
    bin_dir = tmp_path / "pre"
    bin_dir.mkdir()
    for name in ("dot", "strace", "chromium"):
        (bin_dir / name).write_text("#!/bin/bash\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "apt.log"
    (bin_dir / "apt-get").write_text(f'#!/bin/bash\necho "$1" >> {log}\n')
    (bin_dir / "apt-get").chmod(0o755)
    out = subprocess.run(
        [BASH, str(SCRIPT)],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout == "" and not log.exists()


def test_a_dev_null_that_is_a_regular_file_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "null"
    fake.write_text("")
    out = subprocess.run(
        [BASH, str(SCRIPT)],
        env={"PATH": str(tmp_path), "SYSTEM_DEPS_NULL": str(fake)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.splitlines()[0].startswith(f"error: {fake} is not a character device")
