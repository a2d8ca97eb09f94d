"""One seeded fault through the conformance channel, in a patched copy of the repository.

For a mutant (`tests/mutants/NN_name.patch`, first line `# description`):

1. copy the repository's tracked files to a temporary folder and apply the
   patch there (`git apply`), never touching the checkout;
2. check that the fault keeps the code clean: `ruff check` and `mypy`
   (strict, the project's settings) on the copy;
3. run only the conformance channel, with the copy first on `PYTHONPATH`
   (every process the runs start, `metis run`, children, the harness,
   inherits it): `metis explore --budget B --seed S --whole-sweep` (which
   shrinks what it finds; every situation of the sweep runs, so a loaded
   machine does not hide a fault only a late situation shows), then the
   studies' traces checked with `metis conform`: the shipped `metis run`
   scenario, the coordinator tree, and the fault matrix under both
   dispatchers. No unit test runs.

The fault counts as caught when an invariant ID (not `RUN` or `FORMAT`)
was reported by either part.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

NOT_AN_ID = ("RUN", "FORMAT")


@attrs.frozen
class Mutant:
    number: str
    name: str
    description: str
    patch: Path

    @property
    def label(self) -> str:
        return f"{self.number}_{self.name}"


class MutantError(ValueError):
    """A patch file that cannot be read or applied; the message names it."""


def read_mutant(path: Path) -> Mutant:
    stem = path.stem
    number, _, name = stem.partition("_")
    if not number.isdigit() or not name:
        raise MutantError(f"{path}: the name must be NN_name.patch")
    try:
        first = path.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError) as exc:
        raise MutantError(f"{path}: cannot read: {exc}") from None
    if not first.startswith("# ") or len(first) < 10:
        raise MutantError(f"{path}: line 1 must be '# <one-line description>'")
    return Mutant(number, name, first[2:].strip(), path)


def mutants(folder: Path) -> list[Mutant]:
    return [read_mutant(p) for p in sorted(folder.glob("*.patch"))]


def tracked_files(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True, text=True
    ).stdout
    return [p for p in out.split("\0") if p]


def patched_copy(repo: Path, mutant: Mutant | None, into: Path) -> Path:
    """The repository's tracked files (as they are in the working tree) in
    `into`, with the mutant applied."""
    for rel in tracked_files(repo):
        src = repo / rel
        if not src.is_file() or src.is_symlink():
            continue
        dst = into / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    cache = repo / ".mypy_cache"
    if cache.is_dir():  # incremental mypy: the copy's unchanged modules hit it
        shutil.copytree(cache, into / ".mypy_cache", dirs_exist_ok=True)
    if mutant is not None:
        done = subprocess.run(
            ["git", "apply", "--whitespace=nowarn", str(mutant.patch.resolve())],
            cwd=into,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise MutantError(
                f"{mutant.patch}: does not apply: {' '.join(done.stderr.split())[:300]}"
            )
    return into


def changed_files(mutant: Mutant) -> list[str]:
    files = []
    for line in mutant.patch.read_text(encoding="utf-8").splitlines():
        if line.startswith("+++ b/"):
            files.append(line[len("+++ b/") :])
    return files


@attrs.frozen
class Caught:
    """What one part of the channel reported: the IDs, and where."""

    part: str
    ids: tuple[str, ...]
    detail: str = ""


@attrs.frozen
class MutantResult:
    mutant: Mutant
    clean: bool  # ruff and mypy green on the patched copy
    static: str
    caught: tuple[Caught, ...]
    explore: dict[str, Any]
    seconds: float

    @property
    def ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for c in self.caught:
            for i in c.ids:
                if i not in NOT_AN_ID:
                    seen[i] = None
        return tuple(seen)

    @property
    def by_id(self) -> bool:
        return bool(self.ids)

    def to_json(self) -> dict[str, Any]:
        return {
            "mutant": self.mutant.label,
            "description": self.mutant.description,
            "clean": self.clean,
            "static": self.static,
            "caught_by": list(self.ids),
            "parts": [attrs.asdict(c) for c in self.caught],
            "explore": self.explore,
            "seconds": round(self.seconds, 1),
        }


def _env(copy: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("METIS_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(copy), env.get("PYTHONPATH", "")) if p)
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("OPENAI_API_KEY", None)
    return env


def _run(
    argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), -1, "", f"timed out after {timeout:g}s")


def _metis(
    copy: Path, env: dict[str, str], timeout: float, *args: str
) -> subprocess.CompletedProcess[str]:
    """`metis ARGS`, run in the copy (its source first on the path: `_env`)."""
    return _run([sys.executable, "-m", "metis_cli", *args], copy, env, timeout)


def _metis_run(copy: Path, env: dict[str, str], ws: Path, trace: Path, *scenario: str) -> None:
    """`metis run` (the default scenario, or `--scenario NAME`) headless in
    acceptEdits, writing its trace at `trace`."""
    _metis(
        copy,
        env,
        300,
        "run",
        *scenario,
        "--workspace",
        str(ws),
        "--mode",
        "acceptEdits",
        "--headless",
        "--trace",
        str(trace),
        "--quiet",
    )


def static_checks(
    copy: Path, mutant: Mutant, env: dict[str, str], typecheck: bool
) -> tuple[bool, str]:
    python = sys.executable
    files = changed_files(mutant)
    lint = _run([python, "-m", "ruff", "check", "-q", *files], copy, env, 120)
    if lint.returncode != 0:
        return False, f"ruff: {' '.join((lint.stdout + lint.stderr).split())[:200]}"
    if not typecheck:
        return True, "ruff"
    types = _run([python, "-m", "mypy"], copy, env, 900)
    if types.returncode != 0:
        tail = (types.stdout + types.stderr).strip().splitlines()[:2]
        return False, f"mypy: {' '.join(tail)[:200]}"
    return True, "ruff, mypy"


def _conform(paths: Iterable[Path], copy: Path, env: dict[str, str]) -> list[tuple[str, str]]:
    """`metis conform --json` on each; (ID, one line) per violation found."""
    found: list[tuple[str, str]] = []
    for path in paths:
        done = _metis(copy, env, 300, "conform", "--json", str(path))
        try:
            data = json.loads(done.stdout)
        except ValueError:
            found.append(("FORMAT", f"{path}: {' '.join(done.stderr.split())[:200]}"))
            continue
        for report in data if isinstance(data, list) else [data]:
            for v in report.get("violations", []):
                found.append((str(v["invariant"]), f"{path.name}: {v.get('message', '')}"[:200]))
    return found


def _caught(part: str, paths: list[Path], copy: Path, env: dict[str, str]) -> Caught:
    """What `metis conform` found in the traces a part wrote (RUN: it wrote none)."""
    found = _conform(paths, copy, env) if paths else [("RUN", "no trace written")]
    return Caught(part, tuple(i for i, _ in found), "; ".join(m for _, m in found)[:300])


def studies(copy: Path, work: Path, env: dict[str, str]) -> list[Caught]:
    """The studies' traces: the shipped scenario, the coordinator tree, the fault matrix."""
    out: list[Caught] = []
    run = work / "run"
    _metis_run(copy, env, run / "ws", run / "trace.jsonl")
    co = work / "coordinator"
    _metis_run(copy, env, co / "ws", co / "run" / "trace.jsonl", "--scenario", "coordinator")
    for part, paths in (("metis run", [run / "trace.jsonl"]), ("coordinator", [co / "run"])):
        out.append(_caught(part, [p for p in paths if p.exists()], copy, env))
    for dispatcher in ("serial", "four-class"):
        folder = work / f"faults-{dispatcher}"
        _metis(
            copy, env, 600, "faults", "--dispatcher", dispatcher, "--workdir", str(folder), "--json"
        )
        out.append(_caught(f"faults {dispatcher}", sorted(folder.rglob("trace.jsonl")), copy, env))
    return out


def explore_part(
    copy: Path, work: Path, env: dict[str, str], budget: float, seed: int
) -> tuple[Caught, dict[str, Any]]:
    done = _metis(
        copy,
        env,
        budget * 3 + 600,
        "explore",
        "--budget",
        str(budget),
        "--seed",
        str(seed),
        "--out",
        str(work / "explore"),
        "--whole-sweep",
        "--json",
    )
    try:
        summary: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        detail = " ".join(done.stderr.strip().splitlines()[-1:])[:300]
        return Caught("explore", ("RUN",), f"explore failed: {detail}"), {}
    d = summary.get("divergence")
    keep: dict[str, Any] = {
        k: summary[k] for k in ("workloads", "shrink_runs", "events", "seconds") if k in summary
    }
    if d is None:
        return Caught("explore", (), "no divergence"), keep
    keep.update(
        {
            k: d[k]
            for k in ("invariant", "finding", "calls", "calls_before_shrinking", "flaky")
            if k in d
        }
    )
    return Caught("explore", (str(d["invariant"]),), str(d["finding"])[:300]), keep


def run_mutant(
    repo: Path,
    mutant: Mutant | None,
    *,
    budget: float = 60.0,
    seed: int = 0,
    typecheck: bool = True,
    keep: Path | None = None,
) -> MutantResult:
    """The whole channel for one mutant (None: the unpatched runtime)."""
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="metis-mutant-", dir=keep))
    try:
        copy = patched_copy(repo, mutant, tmp / "repo")
        env = _env(copy)
        clean, static = True, "unpatched"
        if mutant is not None:
            clean, static = static_checks(copy, mutant, env, typecheck)
        work = tmp / "work"
        work.mkdir()
        explored, summary = explore_part(copy, work, env, budget, seed)
        caught = (explored, *studies(copy, work, env))
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    placeholder = mutant or Mutant("00", "unpatched", "the runtime as it is", Path("-"))
    return MutantResult(placeholder, clean, static, caught, summary, time.monotonic() - start)
