"""Every invariant, by stable ID. `specs/` states them; this table is their index.

The IDs never change meaning. A retired invariant keeps its ID unused.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Invariant:
    id: str
    family: str
    statement: str
    spec: str  # the specs/ page that defines it


_I = Invariant

INVARIANTS: tuple[Invariant, ...] = (
    _I(
        "TRACE-1",
        "TRACE",
        "Sequence numbers are consecutive, timestamps never decrease, and every causal edge points to an earlier event.",
        "trace-format.md",
    ),
    _I(
        "TRACE-2",
        "TRACE",
        "No file a run writes holds a credential, whether the trace, the journal, offloaded results, child configs and results, or progress output.",
        "trace-format.md",
    ),
    _I(
        "TRACE-3",
        "TRACE",
        "A call's recorded outcome matches its process's witnessed exit: a bash call's result and a Background job's job_done say ok exactly when the process it started exited with status 0; an exit the witness could not observe is reported, never passed.",
        "witness.md",
    ),
    _I(
        "TRACE-4",
        "TRACE",
        "A recorded signal is a witnessed one: each signal event matches a delivery of that signal to that process, seen by the witness from outside, no later than the event and not sent by the process to itself; one the witness could not observe is reported, never passed.",
        "witness.md",
    ),
    _I("LOOP-1", "LOOP", "Every event is enabled in the loop phase in which it occurs.", "loop.md"),
    _I(
        "LOOP-2",
        "LOOP",
        "A run ends as completed only after an assistant message with no tool calls.",
        "loop.md",
    ),
    _I(
        "AUTH-1",
        "AUTH",
        "No effect starts without a prior allow, or an approved ask, for that call occurrence.",
        "permissions.md",
    ),
    _I(
        "AUTH-2",
        "AUTH",
        "Within a batch, every call is decided and every ask resolved before any effect of the batch starts.",
        "permissions.md",
    ),
    _I(
        "AUTH-3",
        "AUTH",
        "No effect starts for a call of a tool outside the trace header's tool surface, at any depth.",
        "permissions.md",
    ),
    _I(
        "AUTH-4",
        "AUTH",
        "A decision's facts include those its recorded settings give for the call: every rule the reference deriver finds matching, protected and secret where it finds them true, in_scope false where it finds a path outside, and a kind other than read_only where it finds the call may write.",
        "permissions.md",
    ),
    _I(
        "PERM-1",
        "PERM",
        "Every recorded decision, with its deciding stage, equals the staged resolution of its recorded facts.",
        "permissions.md",
    ),
    _I(
        "PERM-2",
        "PERM",
        "Deny dominates: if any deny rule matches a call, the decision is deny.",
        "permissions.md",
    ),
    _I(
        "PERM-3",
        "PERM",
        "Bypass-immune checks hold in every mode: a protected-path or secret call is never allowed, in any mode, bypassPermissions included.",
        "permissions.md",
    ),
    _I("PERM-4", "PERM", "plan admits no mutating effect.", "permissions.md"),
    _I("PERM-5", "PERM", "dontAsk never returns ask.", "permissions.md"),
    _I(
        "PERM-6",
        "PERM",
        "Headless resolution never waits on ask: every ask resolves at once to the configured default.",
        "permissions.md",
    ),
    _I(
        "CLOSE-1",
        "CLOSE",
        "Each call occurrence receives at most one terminal result.",
        "closure.md",
    ),
    _I(
        "CLOSE-2",
        "CLOSE",
        "Every call occurrence has its terminal result before the next provider request and before the run ends.",
        "closure.md",
    ),
    _I(
        "CLOSE-3",
        "CLOSE",
        "Results are returned to the provider in call order, one per occurrence: the message sent holds each call's id, in call order.",
        "closure.md",
    ),
    _I(
        "CLOSE-4",
        "CLOSE",
        "No result exists without a matching open call occurrence, and no results message holds an id that no call of its batch has.",
        "closure.md",
    ),
    _I(
        "CLOSE-5",
        "CLOSE",
        "Repair after an interruption stubs exactly the open occurrences, so repeating it changes nothing.",
        "closure.md",
    ),
    _I(
        "CLOSE-6",
        "CLOSE",
        "Compaction never separates a call from its result and never runs while a call is open.",
        "closure.md",
    ),
    _I(
        "CLOSE-7",
        "CLOSE",
        "A provider call id is unique within its assistant message, so a transcript pairs each call with its result unambiguously.",
        "closure.md",
    ),
    _I(
        "CLOSE-9",
        "CLOSE",
        "A call id follows its provider's id rules: unique across the whole request where the provider requires it, and of the provider's form.",
        "closure.md",
    ),
    _I(
        "CLOSE-8",
        "CLOSE",
        "Every context-control step keeps the transcript provider-valid: a cut never separates a tool_use from its result and leaves no result without its call.",
        "loop.md",
    ),
    _I(
        "SCHED-1",
        "SCHED",
        "An Exclusive call's execution interval overlaps no other foreground call's interval.",
        "scheduler.md",
    ),
    _I(
        "SCHED-2",
        "SCHED",
        "Queue calls that share a resource key never overlap and start in FIFO (call) order; a Queue edit call writes only within what its key names.",
        "scheduler.md",
    ),
    _I(
        "SCHED-3",
        "SCHED",
        "An Exclusive call is a barrier: it starts after every earlier admitted call of its batch ended, and no later call starts before it ends.",
        "scheduler.md",
    ),
    _I(
        "SCHED-4",
        "SCHED",
        "A Background call returns a handshake with a job id, and its completion is paired with exactly that handshake.",
        "scheduler.md",
    ),
    _I(
        "SCHED-5",
        "SCHED",
        "A failing call never cancels its siblings: a cancelled or skipped result needs a prior cancel that covers it, or an interrupt; a cancel's cause is read from events, not from its claim: a user or parent cancel names a recorded signal or stop request, a sink failure the sink's recorded error, and a timeout the limit each call it names recorded and ran past; an effect ends cancelled only under such a cancel or an interrupt that names its source, and a cancelled call ends with a cancelled result unless its effect committed; nothing starts after its batch was cancelled.",
        "scheduler.md",
    ),
    _I(
        "SCHED-6",
        "SCHED",
        "A Safe call never overlaps a Queue or Exclusive call of its batch that writes inside its read footprint; the two run in call order.",
        "scheduler.md",
    ),
    _I(
        "CHILD-1",
        "CHILD",
        "A child's tool surface is a subset of its parent's, within the tools its spawn call"
        " allowed and outside those it disallowed.",
        "children.md",
    ),
    _I(
        "CHILD-2",
        "CHILD",
        "A child's mode is never more permissive than its parent's: a spawn that asks for a "
        "more permissive mode is refused, and an admitted one runs in the mode it asked for; "
        "and a child's recorded gate keeps every deny and ask rule of its parent's.",
        "children.md",
    ),
    _I(
        "CHILD-3",
        "CHILD",
        "A plan parent means a plan child, and a plan-locked child has no spawning or mode-changing tools.",
        "children.md",
    ),
    _I(
        "CHILD-4",
        "CHILD",
        "The spawn guard checks depth, then total, then per-parent, then concurrency, then duplicate task, and no admitted spawn exceeds a limit.",
        "children.md",
    ),
    _I(
        "CHILD-5",
        "CHILD",
        "A child's trace links to its parent: one root_run_id for the tree, its parent_id names an agent whose trace holds the spawn event for its agent_id with its mode and tools, and its depth is the parent's plus one.",
        "children.md",
    ),
    _I(
        "CHILD-6",
        "CHILD",
        "A hook in force is enforced: every hook that covers a call ran before its decision unless the gate denied first, a veto became a deny, and every descendant keeps every hook of its parent.",
        "children.md",
    ),
    _I(
        "RETRY-1",
        "RETRY",
        "An effect that has committed is never re-executed automatically.",
        "loop.md",
    ),
    _I(
        "RETRY-2",
        "RETRY",
        "Every commit is in the trace before it is reported, and every report of it is that commit: an effect ends committed only after its commit event; a resumed run answers only calls whose commit the trace holds and never stubs one; each result of a committed call carries the committed effect's outcome and output (the `commit` event's digest), a resumed one too, unless it says the output was not journaled where the trace does not prove the journal holds it.",
        "loop.md",
    ),
    _I(
        "RETRY-3",
        "RETRY",
        "Resume never reports an effect as not run when it may have run: a repair stub is unknown exactly when the call's effect started and the call is not Safe or has committed, and interrupted otherwise.",
        "loop.md",
    ),
    _I(
        "RETRY-4",
        "RETRY",
        "A resume says which outcomes it recovered: a commit written from a call's exit record comes after the interrupt, and the repair names exactly the calls so committed.",
        "loop.md",
    ),
    _I(
        "PLAN-1",
        "PLAN",
        "Every step that runs belongs to a framework that passed validation and passed the gate (an allow, or an approved ask); no step bypasses mediation.",
        "plan.md",
    ),
    _I(
        "PLAN-2",
        "PLAN",
        "References resolve only to completed earlier steps.",
        "plan.md",
    ),
    _I(
        "PLAN-3",
        "PLAN",
        "A mutating step that consumes an empty collection is skipped, and never reported as a success.",
        "plan.md",
    ),
    _I(
        "PLAN-4",
        "PLAN",
        "Recovery proposes at most one alternative, and only if no effect has committed; nothing is retried automatically after a committed effect.",
        "plan.md",
    ),
    _I(
        "PLAN-5",
        "PLAN",
        "An operational error (network, timeout, rate limit, unavailable) is never recovered by switching executors.",
        "plan.md",
    ),
    _I(
        "PLAN-6",
        "PLAN",
        "A resumed turn rebuilds its completed steps as done state, and never repeats a committed mutation.",
        "plan.md",
    ),
    _I(
        "PLAN-7",
        "PLAN",
        "A cached plan is used only when its executor signature and candidate-family signature equal the current ones and the routing epoch is unchanged.",
        "plan.md",
    ),
    _I(
        "PLAN-8",
        "PLAN",
        "A cached plan whose mutating arguments are not grounded in the current request is refused.",
        "plan.md",
    ),
    _I(
        "PLAN-9",
        "PLAN",
        "An approval is bound to (owner, turn, action, arguments digest, destination) and authorizes nothing else; frequency, wording or silence never create a persistent permission.",
        "plan.md",
    ),
    _I(
        "PLAN-10",
        "PLAN",
        "A scheduled task runs as a new turn of its owner, with the owner's authority, never another channel's or account's.",
        "plan.md",
    ),
    _I(
        "PLAN-11",
        "PLAN",
        "The final answer never claims an effect that the effect counters contradict.",
        "plan.md",
    ),
    _I(
        "PLAN-12",
        "PLAN",
        "A framework runs only within the step cap, and the cap never exceeds the hard maximum: neither proposer output nor the cache can raise it.",
        "plan.md",
    ),
    _I(
        "PLAN-13",
        "PLAN",
        "Resolution follows the stated order over the stored plan: it never changes the stored plan, an explicit user target wins over a step reference, and a step runs only when its condition holds.",
        "plan.md",
    ),
    _I(
        "PLAN-14",
        "PLAN",
        "Data keeps its origin: a path argument holds only data of its executor's host or of the request.",
        "plan.md",
    ),
)

BY_ID: dict[str, Invariant] = {inv.id: inv for inv in INVARIANTS}
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(inv.family for inv in INVARIANTS))


def invariant(inv_id: str) -> Invariant:
    """Look up an invariant; an unknown ID is a programming error (KeyError)."""
    return BY_ID[inv_id]
