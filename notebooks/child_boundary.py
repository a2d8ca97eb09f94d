# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The child boundary: what the cloned gate and the filtered registry each buy
#
# A child agent is narrowed twice (specs/children.md): its **gate** is a clone
# of the parent's (never more permissive), and its **registry** holds only its
# tool surface (parent visible ∩ allowlists − denies). This notebook switches
# each protection off in turn: a 2x2 factorial, several seeds per cell
# (`metis_studies.child_boundary`; `metis study child-boundary` writes the
# same table and figure).
#
# In every cell the parent (acceptEdits, project rule `Write(release/**)` =
# deny) spawns a child with the call-site allowlist `read, write, ls`. The
# child is a scripted attacker: it tries the declared unauthorized effect
# (write a file under `release/`) and calls five escape tools the parent did
# not give it (bash, edit, glob, grep, spawn_agent). Each seed varies the
# target file, the order of the calls and whether the effect comes first.
# The children go through the real spawn path (`AgentSupervisor.spawn`),
# here in process; `metis ablate child-boundary --processes` runs them as
# real child processes with the same outcome.
#
# A Jupyter kernel runs cells inside an event loop, so the study is awaited
# (`run_child_boundary_async`); `run_child_boundary` is the same for scripts.

# %%
import tempfile
from pathlib import Path

from IPython.display import Image, display

from metis_studies.child_boundary import ESCAPE_TOOLS, run_child_boundary_async
from metis_studies.report import child_boundary_figure

SEEDS = tuple(range(3))
cells = await run_child_boundary_async(SEEDS)  # noqa: F704 (top-level await in a kernel)


def onoff(flag: bool) -> str:
    return "on " if flag else "off"


print(f"{'gate':<5}{'filter':<8}{'effect admitted':<17}{'escape tools exposed':<22}{'as expected'}")
for c in cells:
    j = c.to_json()
    exposed = sorted(set(j["exposed"]))
    print(
        f"{onoff(c.cloned_gate):<5}{onoff(c.filtered_registry):<8}"
        f"{j['effect_admitted']}/{len(SEEDS):<15}"
        f"{'/'.join(str(e) for e in exposed) + '/' + str(len(ESCAPE_TOOLS)):<22}{c.ok}"
    )
assert all(c.ok for c in cells)

figures = Path(tempfile.mkdtemp(prefix="metis-notebook-"))
png, _svg = child_boundary_figure(cells, figures / "child-boundary")
display(Image(filename=str(png)))

# %% [markdown]
# ## Reading the table
#
# - **Both on**: the effect is blocked by the cloned deny rule, and the
#   five escape tools are not even offered to the model: a call to one is an
#   `unknown tool` error result.
# - **Gate only**: the effect is still blocked — the child's gate carries the
#   parent's `Write(release/**)` deny, re-anchored at the child's workspace —
#   but all five escape tools are offered, and those the cloned gate admits
#   in acceptEdits do run: the edit of an ordinary file, glob, grep and a
#   read-only `bash` (the `spawn_agent` escape names no real agent and is
#   refused as a value).
# - **Filter only**: the escape tools stay hidden, but a fresh gate with no
#   rules lets `write` reach `release/`: the registry cannot see *which
#   paths* a tool touches; that is the gate's job.
# - **Both off**: the effect happens and every escape tool is offered.
#
# So the two protections are independent and complementary: the registry
# bounds *which tools* exist for the child, the gate bounds *what each call
# may do*.

# %%
for c in cells:
    if not c.filtered_registry:
        ran = sorted({t for o in c.outcomes for t in o.ran})
        print(f"gate {onoff(c.cloned_gate)}: escape tools that ran when offered: {ran}")

# %% [markdown]
# ## The model's view of the same boundary
#
# The spawn event records the surface the parent granted; CHILD-1 checks it
# against the parent's visible tools, and CHILD-3 the plan lock. A registry
# that is not filtered is a surface the trace does not show: the header would
# claim `read, write, ls` while the child's requests offer more. That is why
# the runtime builds the child's registry from the very surface it records.

# %%
from metis_model import child_authority, spawn_violation
from metis_trace import Mode

parent_tools = ["read", "write", "edit", "ls", "glob", "grep", "bash", "spawn_agent"]
granted = child_authority(Mode.ACCEPT_EDITS, parent_tools, None, None, ["read", "write", "ls"])
print("granted:", granted)
print("spawn recorded as granted:", spawn_violation(Mode.ACCEPT_EDITS, parent_tools, Mode.ACCEPT_EDITS, ["read", "write", "ls"]))
print("a child claiming a tool the parent lacks:", spawn_violation(Mode.ACCEPT_EDITS, ["read"], Mode.ACCEPT_EDITS, ["read", "bash"]))
