"""The file-system built-ins: read, write, edit, ls, glob, grep."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from metis_trace import CallClass
from metis_trace import ToolKind

from .._errors import ToolError
from .._errors import ToolInputError
from .._private import default_redactor
from ._base import Classification
from ._base import Tool
from ._base import ToolContext
from ._base import ToolInput
from ._base import ToolOutput
from ._base import ToolSpec
from ._base import object_schema
from ._contain import write_at
from ._files import checked_path
from ._files import display_path
from ._files import os_error
from ._files import path_as_checked
from ._ignore import excludes_file
from ._search import Cancellation
from ._search import SearchRequest
from ._search import SearchTimeout
from ._search import SearchUnbounded
from ._search import search
from ._search_walk import BINARY_SNIFF
from ._search_walk import glob_paths
from ._search_walk import is_binary
from ._search_walk import walk_files
from ._search_workers import SearchWorkerError
from ._search_workers import SearchWorkers

READ_DEFAULT_LIMIT = 2000
READ_MAX_LINE = 2000  # characters kept of one line
LS_MAX_ENTRIES = 1000
GLOB_MAX_RESULTS = 1000
GREP_MAX_MATCHES = 500
GREP_MAX_LINE = 500
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are skipped, not scanned
GREP_TIMEOUT_S = 10.0  # one search, start to answer

_STR = {"type": "string", "minLength": 1}


def _safe(kind: ToolKind, paths: tuple[Path, ...]) -> Classification:
    return Classification(CallClass.SAFE, None, kind, paths)


class ReadTool(Tool):
    spec = ToolSpec(
        "read",
        "Read a text file. Lines are numbered from 1. `offset` skips that many lines; "
        f"`limit` caps the lines returned (default {READ_DEFAULT_LIMIT}).",
        object_schema(
            {
                "path": _STR,
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1},
            },
            ("path",),
        ),
    )

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.READ_ONLY

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.spec.validate(input)
        return _safe(
            ToolKind.READ_ONLY,
            (checked_path(ctx.workspace, input["path"], tool="read", occ=ctx.call_occ),),
        )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.spec.validate(input)
        path = path_as_checked(ctx.workspace, input["path"], tool="read", occ=ctx.call_occ)
        offset: int = input.get("offset", 0)
        limit: int = input.get("limit", READ_DEFAULT_LIMIT)
        out: list[str] = []
        more = False
        try:
            fd = ctx.roots.open(path, os.O_RDONLY, tool="read")
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                os.close(fd)
                raise IsADirectoryError(path)
            with open(fd, "rb") as f:
                if is_binary(f.read(BINARY_SNIFF)):
                    raise ToolError(f"read: {path}: binary file")
                f.seek(0)
                for lineno, raw in enumerate(f, 1):
                    if lineno <= offset:
                        continue
                    if len(out) == limit:
                        more = True
                        break
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if len(line) > READ_MAX_LINE:
                        # Never half a credential: the cut moves before one it would split.
                        line = default_redactor().head(line, READ_MAX_LINE) + " [line truncated]"
                    out.append(f"{lineno:6d}\t{line}")
        except IsADirectoryError:
            raise ToolError(f"read: {path}: is a directory (use ls)") from None
        except OSError as exc:
            raise os_error("read", path, exc) from exc
        if more:
            out.append(f"[... more lines; continue with offset={offset + limit}]")
        elif not out:
            return ToolOutput("[empty file]" if offset == 0 else f"[no lines after line {offset}]")
        return ToolOutput("\n".join(out))


class _OneFileEdit(Tool):
    """A tool that edits the one file its `path` names (write, edit): queued on
    that file, so two edits of one file never overlap."""

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EDIT

    def _path(self, input: ToolInput, ctx: ToolContext) -> Path:
        """At run time: where the name leads, which must be where it led
        when the call was classified (`path_as_checked`)."""
        self.spec.validate(input)
        return path_as_checked(ctx.workspace, input["path"], tool=self.spec.name, occ=ctx.call_occ)

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.spec.validate(input)
        path = checked_path(ctx.workspace, input["path"], tool=self.spec.name, occ=ctx.call_occ)
        return Classification(CallClass.QUEUE, f"file:{path}", ToolKind.EDIT, (path,))


class WriteTool(_OneFileEdit):
    spec = ToolSpec(
        "write",
        "Create or overwrite a file with `content` (atomically). Parent directories are created.",
        object_schema({"path": _STR, "content": {"type": "string"}}, ("path", "content")),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        path = self._path(input, ctx)
        data = input["content"].encode("utf-8", "surrogatepass")
        ctx.roots.locate(path, "write")  # outside every root: refused before anything
        try:
            existed = path.exists()
            if existed and path.is_dir():
                raise ToolError(f"write: {path}: is a directory")
            if ctx.transaction is not None:
                ctx.transaction.snapshot(path)
            # The parent as a held descriptor, reached following no symlink: the
            # bytes land at the path the gate checked, or nowhere.
            with ctx.roots.parent(path, tool="write", create=True) as dir_fd:
                write_at(dir_fd, path.name, data)
        except OSError as exc:
            raise os_error("write", path, exc) from exc
        verb = "overwrote" if existed else "created"
        return ToolOutput(f"{verb} {display_path(ctx.workspace, path)} ({len(data)} bytes)")


class EditTool(_OneFileEdit):
    spec = ToolSpec(
        "edit",
        "Replace the exact text `old` with `new` in a file. `old` must occur exactly once "
        "unless `replace_all` is true.",
        object_schema(
            {
                "path": _STR,
                "old": {"type": "string", "minLength": 1},
                "new": {"type": "string"},
                "replace_all": {"type": "boolean"},
            },
            ("path", "old", "new"),
        ),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        path = self._path(input, ctx)
        old: str = input["old"]
        new: str = input["new"]
        if old == new:
            raise ToolInputError("edit: fields 'old' and 'new' are identical")
        try:
            fd = ctx.roots.open(path, os.O_RDONLY, tool="edit")
            with open(fd, "rb") as f:
                if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                    raise IsADirectoryError(path)
                raw = f.read()
        except IsADirectoryError:
            raise ToolError(f"edit: {path}: is a directory") from None
        except OSError as exc:
            raise os_error("edit", path, exc) from exc
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"edit: {path}: not a UTF-8 text file") from None
        count = text.count(old)
        if count == 0:
            raise ToolError(f"edit: 'old' not found in {display_path(ctx.workspace, path)}")
        if count > 1 and not input.get("replace_all", False):
            raise ToolError(
                f"edit: 'old' occurs {count} times in {display_path(ctx.workspace, path)}; "
                "add context to make it unique or set replace_all"
            )
        updated = text.replace(old, new)
        try:
            if ctx.transaction is not None:
                ctx.transaction.snapshot(path)
            with ctx.roots.parent(path, tool="edit") as dir_fd:
                write_at(dir_fd, path.name, updated.encode("utf-8"))
        except OSError as exc:
            raise os_error("edit", path, exc) from exc
        n = "1 occurrence" if count == 1 else f"{count} occurrences"
        return ToolOutput(f"edited {display_path(ctx.workspace, path)} ({n} replaced)")


class _Listing(Tool):
    """A read-only tool that lists or searches below one folder (ls, glob,
    grep): a Safe call on that folder, `path` or else the workspace."""

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.READ_ONLY

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return _safe(ToolKind.READ_ONLY, (self._base_dir(input, ctx),))

    def _base_dir(self, input: ToolInput, ctx: ToolContext, *, run: bool = False) -> Path:
        """The folder a listing or search starts from: as classified, or (`run`)
        as it must still be when the call runs."""
        self.spec.validate(input)
        raw = input.get("path")
        if raw is None:
            return ctx.workspace
        resolve = path_as_checked if run else checked_path
        return resolve(ctx.workspace, raw, tool=self.name, occ=ctx.call_occ)


class LsTool(_Listing):
    spec = ToolSpec(
        "ls",
        "List a directory (default: the workspace). Directories end with '/'.",
        object_schema({"path": _STR}, ()),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        path = self._base_dir(input, ctx, run=True)
        try:
            fd = ctx.roots.open(path, os.O_RDONLY | os.O_DIRECTORY, tool="ls")
            try:
                with os.scandir(fd) as it:
                    listed = [(e.name, e.is_dir()) for e in it]
            finally:
                os.close(fd)
            hidden = ctx.hidden
            entries = sorted(
                name + "/" if is_dir else name
                for name, is_dir in listed
                if hidden is None or not hidden(path / name)
            )
        except NotADirectoryError:
            raise ToolError(f"ls: {path}: not a directory") from None
        except OSError as exc:
            raise os_error("ls", path, exc) from exc
        if not entries:
            return ToolOutput("[empty directory]")
        if len(entries) > LS_MAX_ENTRIES:
            extra = len(entries) - LS_MAX_ENTRIES
            entries = [*entries[:LS_MAX_ENTRIES], f"[... {extra} more entries]"]
        return ToolOutput("\n".join(entries))


_T = TypeVar("_T")


async def _in_thread(fn: Callable[[threading.Event], _T]) -> _T:
    """Run a blocking scan in a thread; on cancellation tell it to stop."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


class GlobTool(_Listing):
    spec = ToolSpec(
        "glob",
        "Find paths matching a glob `pattern` (`**` for any depth) under `path` "
        "(default: the workspace).",
        object_schema({"pattern": _STR, "path": _STR}, ("pattern",)),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        base = self._base_dir(input, ctx, run=True)
        pattern: str = input["pattern"]
        if os.path.isabs(pattern):
            raise ToolInputError("glob: field 'pattern' must be relative (use 'path' for the base)")
        if not base.is_dir():
            raise ToolError(f"glob: {base}: not a directory")

        def scan(stop: threading.Event) -> list[Path]:
            try:  # only what lies inside `base` by real path: no '..', no symlink out
                return glob_paths(base, pattern, stop, GLOB_MAX_RESULTS, ctx.hidden)
            except (ValueError, NotImplementedError) as exc:
                raise ToolInputError(f"glob: field 'pattern' is invalid: {exc}") from None
            except OSError as exc:
                raise os_error("glob", base, exc) from exc

        found = await _in_thread(scan)
        if not found:
            return ToolOutput("[no matches]")
        lines = sorted(display_path(ctx.workspace, p) for p in found[:GLOB_MAX_RESULTS])
        if len(found) > GLOB_MAX_RESULTS:
            lines.append(f"[... stopped after {GLOB_MAX_RESULTS} matches]")
        return ToolOutput("\n".join(lines))


class GrepTool(_Listing):
    spec = ToolSpec(
        "grep",
        "Search file contents with a Python regular expression, line by line, under `path` "
        "(a file or directory; default: the workspace). `glob` filters file names "
        "(e.g. '*.py'). Binary files, symlinks and VCS directories are skipped, and what "
        ".ignore / .rgignore files and, in a git repository, .gitignore, .git/info/exclude "
        "and the global excludes file exclude (set `no_ignore` to search it too).",
        object_schema(
            {"pattern": _STR, "path": _STR, "glob": _STR, "no_ignore": {"type": "boolean"}},
            ("pattern",),
        ),
    )

    out_of_process = True  # a search worker process

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        base = self._base_dir(input, ctx, run=True)
        try:
            regex = re.compile(input["pattern"])
        except re.error as exc:
            raise ToolInputError(
                f"grep: field 'pattern' is not a valid regular expression: {exc}"
            ) from None
        name_glob: str | None = input.get("glob")
        workspace = ctx.workspace

        if not base.exists():
            raise ToolError(f"grep: {base}: No such file or directory")
        respect_ignore = not input.get("no_ignore", False)
        request = SearchRequest(
            pattern=regex.pattern,
            base=str(base),
            glob=name_glob,
            shown_base=display_path(workspace, base if base.is_dir() else base.parent),
            max_matches=GREP_MAX_MATCHES,
            max_line=GREP_MAX_LINE,
            max_file_bytes=GREP_MAX_FILE_BYTES,
            timeout_s=GREP_TIMEOUT_S,
            respect_ignore=respect_ignore,
            # Found here, where HOME and XDG_CONFIG_HOME are: a worker has no environment.
            global_excludes=excludes_file(str(base)) if respect_ignore else None,
        )
        if ctx.hidden is not None and base.is_dir():
            # Only the files the gate would let a Read open are searched (the
            # base itself was decided for this call); one that appears after
            # this list is made is not read either.
            request["only"] = await _in_thread(partial(_visible, request, ctx.hidden))
        try:
            hits, truncated = await _search_off_the_loop(request)
        except SearchUnbounded:
            raise ToolError(
                "grep: no search worker process could run, and this pattern needs Python's re "
                "(a backreference, a lookaround, or a Unicode class on non-ASCII text), whose "
                "time cannot be bounded in this process; rewrite it so that it runs on RE2"
            ) from None
        except SearchTimeout:
            raise ToolError(
                f"grep: stopped after {GREP_TIMEOUT_S:g} s: the pattern is too slow to match "
                "(Python's re backtracks on it; avoid backreferences and lookarounds so that "
                "it runs on RE2, in linear time)"
            ) from None
        if not hits:
            return ToolOutput("[no matches]")
        if truncated:
            hits.append(f"[... stopped after {GREP_MAX_MATCHES} matches]")
        return ToolOutput("\n".join(hits))


_WORKERS = SearchWorkers()


def _visible(
    request: SearchRequest, hidden: Callable[[Path], bool], stop: threading.Event
) -> list[str]:
    """The files under the request's base that its walk finds and `hidden` keeps."""
    base = request["base"]
    found = walk_files(
        base, request["glob"], request["respect_ignore"], request.get("global_excludes")
    )
    return [rel for path, rel in found if not stop.is_set() and not hidden(Path(path))]


async def _search_off_the_loop(request: SearchRequest) -> tuple[list[str], bool]:
    """Run a search in a worker process (off the GIL); in a thread of this
    process if no worker can answer. A cancelled search stops either way."""
    cancel = Cancellation()
    try:
        try:
            return await asyncio.to_thread(_WORKERS.run, request, cancel)
        except SearchWorkerError:
            if cancel.is_set():
                raise
        return await asyncio.to_thread(partial(search, linear_only=True), request, cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise
