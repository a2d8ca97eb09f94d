"""Executors declared by manifests, and the tool that runs one.

A manifest is a JSON or YAML file (`.metis/executors/*.json|yaml|yml`):

    name: read_notes            # the executor (a tool name)
    description: ...
    version: 2
    effect: read_only           # read_only | edit | exec
    family: notes.read          # its candidate family (for the cache signature)
    host: local                 # where its data lives (a label)
    produces: collection        # collection | object | text | none
    consumes: notes             # the argument `from_step` binds (optional)
    preserves_origin: false     # a filter keeps its input's origin
    paths: [path]               # arguments that are paths on `host`
    destination: path           # the argument naming where the effect lands
    requires_one_of: [[a, b]]
    timeout: 30                 # seconds
    program: read_notes.py      # run with this Python, beside the manifest
    args: {type: object, properties: {...}, required: [...]}
    digest: sha256:...          # over everything above and the program's bytes

`digest` is `manifest_digest(...)`: the SHA-256 of the canonical JSON of the
manifest without `digest`, with the program's own SHA-256 added. A manifest
whose digest does not match is refused (its executor is not in the catalog);
`metis plan digest FILE --write` signs a changed one. A changed program or
schema therefore always changes the executor's digest, which makes cached plans
that use it a miss.

The program reads the arguments as one JSON object on stdin and writes its
result as JSON on stdout; exit 0 is success. It may report a failure as
`{"error": {"class": "operational", "reason": "unavailable", "message": "..."}}`
(or a structural class: wrong_args, missing_input, out_of_scope), else a
non-zero exit is an operational failure. It runs in the workspace, in its own
process group, with the tool environment (no credentials), and is killed on a
timeout (an operational `timeout`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_trace import CallClass
from metis_trace import ExecutorInfo
from metis_trace import InputError
from metis_trace import ToolKind
from metis_trace import canonical_digest

from .._errors import ConfigError
from .._errors import ToolError
from .._input import decode_text
from .._input import read_input_bytes
from .._yaml import load_yaml
from ..tools import Classification
from ..tools import Tool
from ..tools import ToolContext
from ..tools import ToolInput
from ..tools import ToolOutput
from ..tools import ToolSpec
from ..tools import resolve_path

MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")
EXECUTORS_DIR = Path(".metis") / "executors"
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
MAX_OUTPUT = 4 * 1024 * 1024
_EFFECTS = {k.value: k for k in (ToolKind.READ_ONLY, ToolKind.EDIT, ToolKind.EXEC)}
_PRODUCES = ("collection", "object", "text", "none")
_FIELDS = {
    "name",
    "description",
    "version",
    "effect",
    "family",
    "host",
    "produces",
    "consumes",
    "preserves_origin",
    "paths",
    "destination",
    "requires_one_of",
    "timeout",
    "program",
    "args",
    "digest",
}


class StepError(ToolError):
    """A failure with its class, written as `[class/reason] message` so that the
    plan driver reads the class back from the call's result."""

    def __init__(self, cls: str, reason: str, message: str) -> None:
        super().__init__(f"[{cls}/{reason}] {message}")
        self.cls = cls
        self.reason = reason


@attrs.frozen
class Manifest:
    path: Path
    info: ExecutorInfo
    description: str
    program: Path
    timeout: float
    data: Mapping[str, Any]  # the manifest as read (digest included)


def _read(path: Path) -> dict[str, Any]:
    """The manifest's mapping; ConfigError (naming the file) when it is none."""
    source = str(path)
    try:
        text = decode_text(read_input_bytes(path), source)
        if path.suffix == ".json":
            from metis_trace import decode_json

            data = decode_json(text, source=source)
        else:
            data = load_yaml(text, source=source)
        if not isinstance(data, dict):
            raise InputError(None, "a manifest is a mapping", source)
    except InputError as exc:
        raise ConfigError(exc.describe(source)) from exc
    return data


def _program_bytes(path: Path, data: Mapping[str, Any]) -> tuple[Path, bytes]:
    raw = data.get("program")
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise ConfigError(f"{path}: program: must name the program file beside the manifest")
    program = (path.parent / raw).resolve()
    if path.parent.resolve() not in program.parents:
        raise ConfigError(f"{path}: program: must be beside the manifest, not {raw!r}")
    try:
        return program, read_input_bytes(program)
    except InputError as exc:
        raise ConfigError(f"{path}: program: {exc.describe()}") from exc


def manifest_digest(data: Mapping[str, Any], program: bytes) -> str:
    """The digest a manifest must carry: over its fields (without `digest`)
    and the SHA-256 of its program."""
    body = {k: v for k, v in data.items() if k != "digest"}
    body["program_sha256"] = hashlib.sha256(program).hexdigest()
    return canonical_digest(body)


def _str(path: Path, data: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}: {key}: must be a non-empty string")
    return value


def _names(path: Path, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{path}: {key}: must be a list of argument names")
    return tuple(value)


def _parse(path: Path, data: Mapping[str, Any]) -> tuple[ExecutorInfo, str, float]:
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown field")
    name = _str(path, data, "name")
    if not name.replace("_", "").isalnum():
        raise ConfigError(f"{path}: name: letters, digits and '_' only, not {name!r}")
    effect = _EFFECTS.get(data.get("effect"))  # type: ignore[arg-type]
    if effect is None:
        raise ConfigError(f"{path}: effect: must be one of {', '.join(_EFFECTS)}")
    produces = data.get("produces", "object")
    if produces not in _PRODUCES:
        raise ConfigError(f"{path}: produces: must be one of {', '.join(_PRODUCES)}")
    args = data.get("args")
    if not isinstance(args, dict) or args.get("type") != "object":
        raise ConfigError(f"{path}: args: must be a JSON schema of type object")
    props = args.get("properties", {})
    if not isinstance(props, dict):
        raise ConfigError(f"{path}: args.properties: must be a mapping")
    groups = data.get("requires_one_of", [])
    if not isinstance(groups, list) or not all(
        isinstance(g, list) and g and all(isinstance(n, str) for n in g) for g in groups
    ):
        raise ConfigError(f"{path}: requires_one_of: must be a list of lists of argument names")
    consumes = data.get("consumes")
    destination = data.get("destination")
    for key, value in (("consumes", consumes), ("destination", destination)):
        if value is not None and (not isinstance(value, str) or value not in props):
            raise ConfigError(f"{path}: {key}: must name an argument of args.properties")
    paths = _names(path, data, "paths")
    for p in paths:
        if p not in props:
            raise ConfigError(f"{path}: paths: {p!r} is not an argument of args.properties")
    timeout = data.get("timeout", DEFAULT_TIMEOUT)
    if (
        not isinstance(timeout, int | float)
        or isinstance(timeout, bool)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise ConfigError(f"{path}: timeout: must be a number of seconds in (0, {MAX_TIMEOUT:g}]")
    preserves = data.get("preserves_origin", False)
    if not isinstance(preserves, bool):
        raise ConfigError(f"{path}: preserves_origin: must be true or false")
    info = ExecutorInfo(
        name=name,
        digest=_str(path, data, "digest"),
        effect=effect,
        family=_str(path, data, "family"),
        host=_str(path, data, "host", "local"),
        produces=produces,
        consumes=consumes,
        preserves_origin=preserves,
        args_schema=args,
        requires_one_of=tuple(tuple(g) for g in groups),
        paths=paths,
        destination=destination,
    )
    return info, _str(path, data, "description", name), float(timeout)


def load_manifest(path: Path) -> Manifest:
    """Read, check and verify one manifest; ConfigError (one line, naming the
    file and field) when it is malformed or its digest does not match."""
    data = _read(path)
    if "digest" not in data:
        raise ConfigError(f"{path}: digest: missing (sign it: metis plan digest {path} --write)")
    info, description, timeout = _parse(path, data)
    program, code = _program_bytes(path, data)
    want = manifest_digest(data, code)
    if data["digest"] != want:
        raise ConfigError(
            f"{path}: digest: does not match the manifest and its program "
            f"(recorded {data['digest']}, computed {want}); refused"
        )
    return Manifest(path, info, description, program, timeout, data)


def sign_manifest(path: Path) -> tuple[str, dict[str, Any]]:
    """The digest `path` should carry, and its data with that digest."""
    data = _read(path)
    _parse(path, {**data, "digest": data.get("digest") or "sha256:unsigned"})
    _, code = _program_bytes(path, data)
    digest = manifest_digest(data, code)
    return digest, {**data, "digest": digest}


def load_manifests(folder: Path) -> tuple[list[Manifest], list[str]]:
    """Every manifest in `folder`: the valid ones, and one line per refused one."""
    found: list[Manifest] = []
    problems: list[str] = []
    if not folder.is_dir():
        return found, problems
    names: set[str] = set()
    for path in sorted(folder.iterdir()):
        if path.suffix not in MANIFEST_SUFFIXES or not path.is_file():
            continue
        try:
            manifest = load_manifest(path)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        if manifest.info.name in names:
            problems.append(f"{path}: name: {manifest.info.name!r} is declared twice; refused")
            continue
        names.add(manifest.info.name)
        found.append(manifest)
    return found, problems


# --- running one ----------------------------------------------------------------------


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class ManifestTool(Tool):
    """A manifest's executor as a registry tool: the same gate, dispatcher and
    trace as every other tool. Read-only executors are Safe, the others
    Exclusive; an `edit` executor's path arguments are snapshotted first, so a
    failed run is rolled back."""

    out_of_process = True

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        info = manifest.info
        self._spec = ToolSpec(info.name, manifest.description, dict(info.args_schema))

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def kind(self, input: ToolInput) -> ToolKind:
        return self.manifest.info.effect

    def _paths(self, input: ToolInput, ctx: ToolContext) -> tuple[Path, ...]:
        out: list[Path] = []
        for name in self.manifest.info.paths:
            value = input.get(name)
            values: Sequence[Any] = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, dict):
                    v = v.get("path")
                if isinstance(v, str) and v:
                    out.append(resolve_path(ctx.workspace, v, tool=self.name, field=name))
        return tuple(out)

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        kind = self.kind(input)
        cls = CallClass.SAFE if kind is ToolKind.READ_ONLY else CallClass.EXCLUSIVE
        return Classification(cls, None, kind, self._paths(input, ctx))

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        if ctx.transaction is not None:
            for path in self._paths(input, ctx):
                ctx.transaction.snapshot(path)
        payload = json.dumps(dict(input), ensure_ascii=False).encode("utf-8")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            str(self.manifest.program),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ctx.workspace,
            env=dict(ctx.env),
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(payload), timeout=self.manifest.timeout
            )
        except TimeoutError:
            _kill(proc.pid)
            await proc.wait()
            raise StepError(
                "operational", "timeout", f"{self.name}: no answer in {self.manifest.timeout:g}s"
            ) from None
        except asyncio.CancelledError:
            _kill(proc.pid)
            raise
        finally:
            _kill(proc.pid)  # nothing of the group outlives the call
        return self._answer(proc.returncode, out, err)

    def _answer(self, code: int | None, out: bytes, err: bytes) -> ToolOutput:
        if len(out) > MAX_OUTPUT:
            raise StepError(
                "operational", "unavailable", f"{self.name}: output over {MAX_OUTPUT} bytes"
            )
        try:
            value = json.loads(out.decode("utf-8")) if out.strip() else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            value = None
            if code == 0:
                raise StepError(
                    "operational", "unavailable", f"{self.name}: its output is not JSON"
                ) from None
        if isinstance(value, dict) and isinstance(value.get("error"), dict):
            e = value["error"]
            cls = e.get("class") if e.get("class") in _CLASSES else "operational"
            reason = str(e.get("reason") or "unavailable")
            raise StepError(cls, reason, f"{self.name}: {e.get('message') or reason}")
        if code != 0:
            tail = " ".join(err.decode("utf-8", "replace").split())[-300:]
            raise StepError("operational", "unavailable", f"{self.name}: exit {code}: {tail}")
        return ToolOutput(json.dumps(value, ensure_ascii=False, sort_keys=True))


_CLASSES = ("wrong_tool", "wrong_args", "missing_input", "out_of_scope", "operational")
