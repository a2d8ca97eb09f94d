"""The plan rules as the runtime applies them: validation, resolution,
batching, grounding, signatures, the canonical request and consent binding.

Written apart from the model (`metis_model.plan`), which the runtime never
imports: `metis conform` compares the two on every turn log, and
`tests/plan/test_runtime_lockstep.py` on generated inputs. The rules are
stated in `specs/plan.md`; the order of resolution is fixed: (1) an explicit
user target over a step reference, (2) `from_step`, (3) `${stepN...}`,
(4) `${RUNTIME:key}`, (5) `${FILLER:name}`, in one pass over the stored
arguments (substituted data is never read again as a reference).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

import attrs

from metis_trace import HARD_STEP_MAX
from metis_trace import TERMINAL_TOOL
from metis_trace import Action
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import Framework
from metis_trace import FrameworkStep
from metis_trace import Signatures
from metis_trace import ToolKind
from metis_trace import ValidationFailure
from metis_trace import canonical_digest
from metis_trace import canonical_json

from .._errors import ToolInputError
from ..tools import ToolSpec

TOKEN = re.compile(
    r"\$\{(?:step(?P<step>[1-9][0-9]*)(?P<path>(?:\.[A-Za-z0-9_-]+)*)"
    r"|RUNTIME:(?P<runtime>[A-Za-z_][A-Za-z0-9_.-]*)"
    r"|FILLER:(?P<filler>[A-Za-z_][A-Za-z0-9_]*))\}"
)
RUNTIME_VALUES = ("turn_id", "owner", "channel", "conversation", "now", "date")
REQUEST = "request"  # the origin of literals, targets, runtime values and fillers
_MUTATIONS = (ToolKind.EDIT, ToolKind.EXEC)
_TRAILING = ".!?;:, "


def canonical_request(text: str) -> str:
    """The L0 key: NFKC, case-folded, whitespace collapsed, trailing punctuation off."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(_TRAILING)


# --- references ------------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def tokens(text: str) -> tuple[list[re.Match[str]], bool]:
    """The well-formed placeholders of `text`, and whether anything else
    that opens with `${` is left (a malformed reference)."""
    found = list(TOKEN.finditer(text))
    rest = TOKEN.sub("", text)
    return found, "${" in rest


def reads(step: FrameworkStep) -> set[int]:
    """The step numbers a step reads (from_step, `${stepN}`, its condition)."""
    out: set[int] = set()
    for name, value in step.args.items():
        if name == "from_step":
            if isinstance(value, int) and not isinstance(value, bool):
                out.add(value)
            continue
        for text in _strings(value):
            out.update(int(m["step"]) for m in tokens(text)[0] if m["step"])
    if step.when is not None:
        out.add(step.when.step)
    return out


def batches(framework: Framework) -> list[list[int]]:
    """Steps dispatched together: a step starts a new batch when it reads one of
    the batch it would join (so what it reads has finished first)."""
    groups: list[list[int]] = []
    for number, step in enumerate(framework.steps, start=1):
        if step.tool == TERMINAL_TOOL:
            break
        if groups and not reads(step) & set(groups[-1]):
            groups[-1].append(number)
        else:
            groups.append([number])
    return groups


# --- validation --------------------------------------------------------------------------


def _fail(cls: ErrorClass, step: int | None, message: str) -> ValidationFailure:
    return ValidationFailure(cls=cls, step=step, message=message)


class _Validator:
    def __init__(self, framework: Framework, catalog: Mapping[str, ExecutorInfo], cap: int):
        self.fw = framework
        self.catalog = catalog
        self.cap = max(0, min(cap, HARD_STEP_MAX))
        self.failures: list[ValidationFailure] = []

    def run(self) -> list[ValidationFailure]:
        steps = self.fw.steps
        terminal_last = steps[-1].tool == TERMINAL_TOOL
        if not terminal_last:
            self.failures.append(
                _fail(ErrorClass.WRONG_ARGS, None, f"the last step must be {TERMINAL_TOOL}")
            )
        for n, s in enumerate(steps[:-1], start=1):
            if s.tool == TERMINAL_TOOL:
                self.failures.append(
                    _fail(ErrorClass.WRONG_ARGS, n, f"{TERMINAL_TOOL} may only be the last step")
                )
        body = len(steps) - int(terminal_last)
        if body > self.cap:
            self.failures.append(
                _fail(
                    ErrorClass.OUT_OF_SCOPE, None, f"{body} steps, over the step cap of {self.cap}"
                )
            )
        for n, s in enumerate(steps, start=1):
            info = self.catalog.get(s.tool)
            if s.tool != TERMINAL_TOOL and info is None:
                self.failures.append(_fail(ErrorClass.WRONG_TOOL, n, f"no executor {s.tool!r}"))
                continue
            self._references(n, s)
            if info is not None and s.tool != TERMINAL_TOOL:
                self._arguments(n, s, info)
        return self.failures

    def _points_back(self, n: int, target: int, what: str) -> bool:
        steps = self.fw.steps
        if not 1 <= target < n:
            self.failures.append(_fail(ErrorClass.WRONG_ARGS, n, f"{what}: not an earlier step"))
            return False
        if steps[target - 1].tool == TERMINAL_TOOL:
            self.failures.append(_fail(ErrorClass.WRONG_ARGS, n, f"{what}: the terminal"))
            return False
        return True

    def _references(self, n: int, s: FrameworkStep) -> None:
        for name, value in s.args.items():
            if name == "from_step":
                if not isinstance(value, int) or isinstance(value, bool):
                    self.failures.append(_fail(ErrorClass.WRONG_ARGS, n, "from_step: not a step"))
                elif self._points_back(n, value, f"from_step {value}"):
                    producer = self.catalog.get(self.fw.steps[value - 1].tool)
                    if producer is not None and producer.produces != "collection":
                        self.failures.append(
                            _fail(ErrorClass.WRONG_ARGS, n, f"step {value} makes no collection")
                        )
                continue
            for text in _strings(value):
                found, malformed = tokens(text)
                if malformed:
                    self.failures.append(_fail(ErrorClass.WRONG_ARGS, n, f"malformed: {text!r}"))
                for m in found:
                    if m["step"]:
                        self._points_back(n, int(m["step"]), m[0])
                    elif m["runtime"]:
                        key = m["runtime"]
                        if key not in RUNTIME_VALUES and not key.startswith("target."):
                            self.failures.append(
                                _fail(ErrorClass.WRONG_ARGS, n, f"{m[0]}: no such value")
                            )
                    elif m["filler"] not in self.fw.fillers:
                        self.failures.append(
                            _fail(ErrorClass.MISSING_INPUT, n, f"{m[0]}: not declared")
                        )
        if s.when is not None:
            self._points_back(n, s.when.step, "when")

    def _arguments(self, n: int, s: FrameworkStep, info: ExecutorInfo) -> None:
        schema = info.args_schema
        props = schema.get("properties", {})
        present = {k for k in s.args if k != "from_step"}
        stand_in: dict[str, Any] = {}
        if "from_step" in s.args:
            if info.consumes is None:
                self.failures.append(_fail(ErrorClass.WRONG_ARGS, n, f"{s.tool} consumes nothing"))
            elif info.consumes in s.args:
                self.failures.append(
                    _fail(ErrorClass.WRONG_ARGS, n, f"from_step and {info.consumes!r} both given")
                )
            else:
                present.add(info.consumes)
        for name in schema.get("required", ()):
            if name not in present:
                self.failures.append(_fail(ErrorClass.MISSING_INPUT, n, f"{name!r} is missing"))
        for group in info.requires_one_of:
            if not present & set(group):
                self.failures.append(
                    _fail(ErrorClass.MISSING_INPUT, n, f"one of {', '.join(group)} is needed")
                )
        for name, value in s.args.items():
            if name == "from_step":
                continue
            texts = list(_strings(value))
            refs = [m for t in texts for m in tokens(t)[0]]
            if (
                not refs
                or name not in props
                or (
                    isinstance(value, str)
                    and (all(not m["step"] for m in refs) or TOKEN.fullmatch(value) is None)
                )
            ):
                stand_in[name] = value
        problem = schema_problem(s.tool, schema, stand_in)
        if problem:
            self.failures.append(_fail(ErrorClass.WRONG_ARGS, n, problem))
        if info.host == "local":
            for name in info.paths:
                value = s.args.get(name)
                if isinstance(value, str) and "${" not in value:
                    parts = value.replace("\\", "/").split("/")
                    if value.startswith(("/", "~")) or ".." in parts:
                        self.failures.append(
                            _fail(ErrorClass.OUT_OF_SCOPE, n, f"{name!r} leaves the workspace")
                        )


def validate(
    framework: Framework, catalog: Mapping[str, ExecutorInfo], cap: int
) -> list[ValidationFailure]:
    return _Validator(framework, catalog, cap).run()


def schema_problem(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """The first argument that does not fit its property's `type` or `enum`
    (or is unknown to a closed schema), checked by the tools' own validator.
    An `anyOf` / `oneOf` whose every branch names a type counts as the union
    of those types (pydantic's optional argument: `[{type: X}, {type: null}]`)."""
    props = schema.get("properties", {})
    narrowed: dict[str, dict[str, Any]] = {}
    for name, prop in props.items():
        if isinstance(prop, dict):
            narrowed[name] = {k: v for k, v in prop.items() if k in ("type", "enum")}
            union = _branch_types(prop)
            if "type" not in prop and union:
                narrowed[name]["type"] = union
    closed = schema.get("additionalProperties", True) is False
    spec = ToolSpec(
        tool, "", {"type": "object", "properties": narrowed, "additionalProperties": not closed}
    )
    try:
        spec.validate(args)
    except ToolInputError as exc:
        return str(exc)
    return None


_JSON_TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")


def _branch_types(prop: Mapping[str, Any]) -> list[str] | None:
    """The types a property allows, or None when it allows any."""
    if "type" in prop:
        types = prop["type"]
        named = [types] if isinstance(types, str) else list(types)
        return [t for t in named if t in _JSON_TYPE_NAMES] or None
    branches = prop.get("anyOf", prop.get("oneOf"))
    if not isinstance(branches, list) or not branches:
        return None
    union: list[str] = []
    for branch in branches:
        types = _branch_types(branch) if isinstance(branch, dict) else None
        if types is None:
            return None
        union += [t for t in types if t not in union]
    return union


# --- resolution ------------------------------------------------------------------------------


@attrs.frozen
class Done:
    """What resolution may read of a finished step: its output and origin."""

    output: Any
    origin: str


@attrs.frozen
class Resolved:
    args: dict[str, Any] | None
    origins: dict[str, str]
    refs: tuple[int, ...]
    fillers: dict[str, str]
    missing: tuple[str, ...] = ()
    refused: tuple[ErrorClass, str] | None = None
    consumed: int | None = None
    empty: bool = False


class Refused(Exception):
    def __init__(self, cls: ErrorClass, message: str) -> None:
        super().__init__(message)
        self.cls = cls


@attrs.define
class _Reading:
    """The state of resolving one step."""

    number: int
    done: Mapping[int, Done]
    runtime: Mapping[str, str]
    fillers: Mapping[str, str]
    targets: Mapping[str, str]
    refs: set[int] = attrs.field(factory=set)
    hosts: set[str] = attrs.field(factory=set)
    used: dict[str, str] = attrs.field(factory=dict)
    missing: list[str] = attrs.field(factory=list)

    def step(self, n: int, path: str, label: str) -> Any:
        if n >= self.number or n not in self.done:
            raise Refused(ErrorClass.WRONG_ARGS, f"{label}: step {n} has not completed")
        self.refs.add(n)
        self.hosts.add(self.done[n].origin)
        value = self.done[n].output
        for part in [p for p in path.split(".") if p]:
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise Refused(ErrorClass.WRONG_ARGS, f"{label}: step {n} has no field {part!r}")
        return value

    def token(self, m: re.Match[str]) -> Any:
        if m["step"]:
            return self.step(int(m["step"]), m["path"] or "", m[0])
        if m["runtime"]:
            key = m["runtime"]
            if key.startswith("target."):
                name = key[len("target.") :]
                if name not in self.targets:
                    raise Refused(ErrorClass.MISSING_INPUT, f"{m[0]}: the request names no {name}")
                return self.targets[name]
            if key not in self.runtime:
                raise Refused(ErrorClass.WRONG_ARGS, f"{m[0]}: unknown runtime value")
            return self.runtime[key]
        name = m["filler"]
        if name in self.fillers:
            self.used[name] = self.fillers[name]
            return self.fillers[name]
        if name not in self.missing:
            self.missing.append(name)
        return None

    def value(self, raw: Any) -> Any:
        if isinstance(raw, dict):
            return {k: self.value(v) for k, v in raw.items()}
        if isinstance(raw, list | tuple):
            return [self.value(v) for v in raw]
        if not isinstance(raw, str) or "${" not in raw:
            return raw
        found, malformed = tokens(raw)
        if len(found) == 1 and found[0].span() == (0, len(raw)):
            return self.token(found[0])
        if malformed:
            raise Refused(ErrorClass.WRONG_ARGS, f"{raw!r}: malformed reference")

        def text(m: re.Match[str]) -> str:
            got = self.token(m)
            return got if isinstance(got, str) else canonical_json(got)

        return TOKEN.sub(text, raw)

    def origin(self) -> str:
        hosts = self.hosts - {REQUEST}
        self.hosts = set()
        if not hosts:
            return REQUEST
        return hosts.pop() if len(hosts) == 1 else "mixed"


def _mentions_a_step(raw: Any) -> bool:
    return any(m["step"] for t in _strings(raw) for m in tokens(t)[0])


def resolve(
    step: FrameworkStep,
    number: int,
    info: ExecutorInfo,
    done: Mapping[int, Done],
    *,
    runtime: Mapping[str, str],
    fillers: Mapping[str, str],
    targets: Mapping[str, str],
) -> Resolved:
    """One step's arguments, resolved over the stored plan (never changed)."""
    r = _Reading(number, done, runtime, fillers, targets)
    args: dict[str, Any] = {}
    origins: dict[str, str] = {}
    try:
        for name, raw in step.args.items():
            if name == "from_step":
                if not isinstance(raw, int) or isinstance(raw, bool):
                    raise Refused(ErrorClass.WRONG_ARGS, "from_step: must be a step number")
                if info.consumes is None:
                    raise Refused(
                        ErrorClass.WRONG_ARGS, f"{step.tool} does not consume a collection"
                    )
                into = info.consumes
                if into in targets:
                    args[into], origins[into] = targets[into], REQUEST
                    continue
                collection = r.step(raw, "", f"from_step {raw}")
                if not isinstance(collection, list):
                    raise Refused(ErrorClass.WRONG_ARGS, f"step {raw} produced no collection")
                args[into], origins[into] = collection, r.origin()
            elif name in targets and _mentions_a_step(raw):
                args[name], origins[name] = targets[name], REQUEST
            else:
                args[name] = r.value(raw)
                origins[name] = r.origin()
        if step.when is not None:
            n = step.when.step
            if n >= number or n not in done:
                raise Refused(ErrorClass.WRONG_ARGS, f"when: step {n} has not completed")
            r.refs.add(n)
        if r.missing:
            return Resolved(None, origins, tuple(sorted(r.refs)), r.used, tuple(r.missing))
        for name in info.paths:
            origin = origins.get(name, REQUEST)
            if origin not in (REQUEST, info.host):
                raise Refused(
                    ErrorClass.OUT_OF_SCOPE,
                    f"argument {name!r} holds data from host {origin!r}; "
                    f"{step.tool} runs on {info.host!r}",
                )
        problem = schema_problem(step.tool, info.args_schema, args)
        if problem:
            raise Refused(ErrorClass.WRONG_ARGS, problem)
    except Refused as exc:
        return Resolved(None, origins, tuple(sorted(r.refs)), r.used, refused=(exc.cls, str(exc)))
    consumed = None
    if info.consumes is not None and isinstance(args.get(info.consumes), list):
        consumed = len(args[info.consumes])
    return Resolved(
        args,
        origins,
        tuple(sorted(r.refs)),
        r.used,
        consumed=consumed,
        empty=consumed == 0 and info.effect in _MUTATIONS,
    )


def condition_met(step: FrameworkStep, done: Mapping[int, Done]) -> bool:
    if step.when is None:
        return True
    d = done.get(step.when.step)
    filled = d is not None and isinstance(d.output, list) and bool(d.output)
    return filled if step.when.nonempty is not None else not filled


def output_origin(info: ExecutorInfo, origins: Mapping[str, str]) -> str:
    if info.preserves_origin and info.consumes is not None:
        return origins.get(info.consumes, REQUEST)
    return info.host


# --- reuse -----------------------------------------------------------------------------------


def signatures(framework: Framework, catalog: Mapping[str, ExecutorInfo], epoch: int) -> Signatures:
    used = sorted({s.tool for s in framework.steps if s.tool != TERMINAL_TOOL})
    executors = (
        canonical_digest([[n, catalog[n].digest] for n in used])
        if all(n in catalog for n in used)
        else None
    )
    families = {catalog[n].family for n in used if n in catalog}
    members = sorted([e.family, e.name] for e in catalog.values() if e.family in families)
    return Signatures(executors=executors, families=canonical_digest(members), epoch=epoch)


def ungrounded(
    framework: Framework,
    catalog: Mapping[str, ExecutorInfo],
    request: str,
    targets: Mapping[str, str],
) -> list[str]:
    """Literal values of mutating steps that the request does not contain."""
    said = " ".join(request.split())
    out: list[str] = []
    for s in framework.steps:
        info = catalog.get(s.tool)
        if s.tool == TERMINAL_TOOL or info is None or info.effect not in _MUTATIONS:
            continue
        for text in _strings(s.args):
            found, _ = tokens(text)
            if not found and "${" not in text:
                if text and text not in targets.values() and " ".join(text.split()) not in said:
                    out.append(text)
                continue
            for m in found:
                key = m["runtime"] or ""
                if key.startswith("target.") and key[len("target.") :] not in targets:
                    out.append(m[0])
    return out


# --- consent -------------------------------------------------------------------------------


def destination(info: ExecutorInfo, args: Mapping[str, Any]) -> str:
    if info.destination is None:
        return f"{info.host}:*"
    value = args.get(info.destination)
    return f"{info.host}:{value if isinstance(value, str) else canonical_digest(value)}"


def action(owner: str, turn: str, info: ExecutorInfo, args: Mapping[str, Any]) -> Action:
    """What an approval for this call is bound to."""
    return Action(
        owner=owner,
        turn=turn,
        tool=info.name,
        executor_digest=info.digest,
        args_digest=canonical_digest(dict(args)),
        destination=destination(info, args),
    )
