"""Containment, encoded credentials, exit records and detached jobs
(specs/secrets.md: "Containment", "Encoded credentials", "Processes";
`metis_runtime/tools/_contain.py`, `metis_trace/_encodings.py` through the
redactor `metis_runtime/_redact.py`, `tools/_exits.py`, `tools/_jobs.py`).

- `contain:symlink`: a link in the workspace to a folder outside it; reads
  and writes through it, and by `..`, allowed by bare `Read`/`Write` rules
  (stage 6 comes before the scope): the tools must refuse them ("outside the
  workspace"). The outside file holds a marker planted as a canary, so a read
  that escapes puts it in the trace (TRACE-2); a write that escapes leaves a
  file outside, which this module's check reports (AUTH-1: the effect lay
  outside every root the allow could cover).
- `credential:encoded`: a credential inside a base64 run (a Kubernetes
  Secret's `data:`), percent-encoded in a URL, and base64 of such a URL
  (nested): read back, and copied; each encoded span is a canary too, so a
  redactor that misses one is TRACE-2 by exact match.
- `exits:recovered` / `exits:unknown`: `metis run` killed right before the
  trace's commit of a bash call that exited 3 (its exit record answers it on
  resume: a `recovered` commit, RETRY-4, and the witnessed exit, TRACE-3),
  and right after its admit (no record: `unknown`, RETRY-3).
- `jobs:detached`: `--detach-jobs` with a job still running at the end
  (`job_done detached`, with its process group) beside one that failed
  (`job_done error`, TRACE-3 against the witness).
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from pathlib import Path

from metis_trace import Commit
from metis_trace import EffectOutcome
from metis_trace import JobDone
from metis_trace import Mode
from metis_trace import Repair
from metis_trace import ResultStatus

from ._mech_case import Case
from ._mech_case import Problem
from ._mech_read import Traces
from ._mech_read import answered
from ._mech_read import changed_files
from ._mech_read import script
from ._pieces import bash
from ._pieces import read
from ._pieces import write
from ._workload import Fault
from ._workload import Rule
from ._workload import Workload

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def marker_token(seed: str, n: int = 36) -> str:
    digest = hashlib.sha256(seed.encode()).digest() * 2
    return "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:n])


MARKER = f"metis-explore-outside-{marker_token('outside', 20)}"


def containment() -> Workload:
    escapes = [
        read("link/vault.txt"),
        write("link/escape.txt", "escaped\n"),
        write("../outside/direct.txt", "escaped\n"),
        read("../outside/vault.txt"),
        ("edit", {"path": "link/vault.txt", "old": "vault", "new": "VAULT"}),
    ]
    return Workload(
        name="mech-contain:symlink",
        aims=("contain:symlink",),
        files={"notes.txt": "n\n"},
        turns=script([bash("ln -s ../outside link")], escapes),
        mode=Mode.BYPASS,
        rules=tuple(
            Rule(behavior="allow", pattern=p) for p in ("Read", "Write", "Edit", "Bash(ln -s *)")
        ),
        placed={"outside/vault.txt": f"vault {MARKER}\n"},
        canaries=(MARKER,),
    )


def _encoded() -> tuple[dict[str, str], tuple[str, ...]]:
    tokens = [f"ghp_{marker_token(f'enc{i}')}" for i in range(3)]
    b64 = base64.b64encode(f"token={tokens[0]}".encode()).decode()
    pct = tokens[1].replace("_", "%5F")
    nested = base64.b64encode(
        f"https://hooks.example/cb?key={tokens[2].replace('_', '%5F')}".encode()
    ).decode()
    files = {
        "enc/secret.yaml": f"apiVersion: v1\nkind: Secret\ndata:\n  token: {b64}\n",
        "enc/callback.txt": f"url = https://api.example/cb?key={pct}&x=1\n",
        "enc/nested.txt": f"blob: {nested}\n",
    }
    return files, (*tokens, b64, pct, nested)


def encoded() -> Workload:
    files, canaries = _encoded()
    reads = [read(name) for name in files]
    return Workload(
        name="mech-credential:encoded",
        aims=("credential:encoded",),
        files=files,
        turns=script(
            reads,
            [
                bash("cat enc/secret.yaml enc/nested.txt"),
                write("copy.txt", files["enc/callback.txt"]),
            ],
        ),
        mode=Mode.BYPASS,
        canaries=canaries,
    )


EXIT_COMMAND = "echo made >> out.txt; echo first-line; exit 3"


def exit_record(point: str, focus: str) -> Workload:
    return Workload(
        name=f"mech-{focus}",
        aims=(focus,),
        turns=script([bash(EXIT_COMMAND)]),
        mode=Mode.BYPASS,
        fault=Fault(kind="kill", point=point),
    )


def detached() -> Workload:
    jobs = [
        bash("echo $$ > job.pid; sleep 4", background=True),
        bash("echo started > job.txt; exit 4", background=True),
    ]
    wait = bash("until test -s job.pid && test -s job.txt; do sleep 0.05; done; sleep 0.3")
    return Workload(
        name="mech-jobs:detached",
        aims=("jobs:detached",),
        turns=script(jobs, [wait]),
        mode=Mode.BYPASS,
        detach_jobs=True,
    )


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    for _, _, inp, r in answered(traces):
        text = " ".join(str(v) for v in inp.values())
        if r.status is ResultStatus.ERROR and "outside the workspace" in r.content:
            seen["contain:symlink-refused" if "link/" in text else "contain:dotdot-refused"] += 1
        if r.status is ResultStatus.OK and text.startswith("enc/"):
            seen[
                {
                    "enc/secret.yaml": "encoded:base64",
                    "enc/callback.txt": "encoded:percent",
                    "enc/nested.txt": "encoded:nested",
                }.get(text, "encoded:other")
            ] += 1
    for _, events in traces.values():
        for e in events:
            if isinstance(e, Commit) and e.recovered:
                seen["exit:recovered"] += 1
            elif isinstance(e, Repair) and e.unknown:
                seen["exit:unknown"] += 1
            elif isinstance(e, JobDone) and e.outcome is EffectOutcome.DETACHED and e.pid:
                seen["job:detached"] += 1
            elif isinstance(e, JobDone) and e.outcome is EffectOutcome.ERROR:
                seen["job:failed"] += 1
    return seen


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    """Containment: nothing appeared or changed outside the workspace."""
    placed = {n: t for n, t in workload.placed.items() if n.startswith("outside/")}
    return [
        (
            "AUTH-1",
            f"{name} was written outside every root the allow could cover"
            " (the tools' containment must refuse it)",
            "",
        )
        for name in changed_files(root / "outside", placed, root)
    ]


CASES = (
    Case(
        "contain:symlink",
        "tools",
        ("contain:symlink-refused", "contain:dotdot-refused"),
        containment,
        reached,
        check,
    ),
    Case(
        "credential:encoded",
        "trace",
        ("encoded:base64", "encoded:percent", "encoded:nested"),
        encoded,
        reached,
    ),
    Case(
        "exits:recovered",
        "journal",
        ("exit:recovered",),
        lambda: exit_record("trace:commit:1.0", "exits:recovered"),
        reached,
    ),
    Case(
        "exits:unknown",
        "journal",
        ("exit:unknown",),
        lambda: exit_record("journal:admit:1.0", "exits:unknown"),
        reached,
    ),
    Case("jobs:detached", "tools", ("job:detached", "job:failed"), detached, reached),
)
