"""Watching directory trees with inotify (inotify_simple), recursively.

New directories are watched as they appear and listed at once (what was
made in them before their watch counts as changed, `scan`); a root that does
not exist yet is reached by *guide* watches on its existing ancestors, which
only follow the path down to it. Excluded paths (the runtime's own files,
`.git` folders) are not watched, or their events are dropped and counted. A
queue overflow (IN_Q_OVERFLOW) is reported as lost, and every tree is walked
again so that directories made meanwhile get their watches.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable
from collections.abc import Sequence
from typing import Any

from inotify_simple import INotify
from inotify_simple import flags

_F = flags
FULL_MASK = (
    _F.CREATE
    | _F.DELETE
    | _F.MODIFY
    | _F.CLOSE_WRITE
    | _F.ATTRIB
    | _F.MOVED_FROM
    | _F.MOVED_TO
    | _F.DELETE_SELF
    | _F.MOVE_SELF
    | _F.DONT_FOLLOW
    | _F.EXCL_UNLINK
    | _F.ONLYDIR
)
GUIDE_MASK = _F.CREATE | _F.MOVED_TO | _F.DONT_FOLLOW | _F.EXCL_UNLINK | _F.ONLYDIR
OPS = (
    (_F.CREATE, "create"),
    (_F.MODIFY, "modify"),
    (_F.CLOSE_WRITE, "close_write"),
    (_F.ATTRIB, "attrib"),
    (_F.DELETE, "delete"),
    (_F.MOVED_FROM, "moved_from"),
    (_F.MOVED_TO, "moved_to"),
    (_F.DELETE_SELF, "delete_self"),
    (_F.MOVE_SELF, "move_self"),
)
EXCLUDED_NAMES = frozenset({".git"})


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


class TreeWatcher:
    """Watches `roots` (absolute, real paths) minus `excluded`; `handle` turns
    one read of events into change and lost records (dicts of the witness file)."""

    def __init__(
        self,
        inotify: INotify,
        roots: Sequence[str],
        excluded: Sequence[str],
        clock: Any,
    ) -> None:
        self._ino = inotify
        self.roots = tuple(roots)
        self.excluded = tuple(excluded)
        self._clock = clock
        self._path: dict[int, str] = {}
        self._full: dict[int, bool] = {}
        self._wd: dict[str, int] = {}
        self.excluded_events = 0
        self.lost: list[dict[str, Any]] = []  # watch failures, reported with the next batch

    # --- which paths ------------------------------------------------------------

    def is_excluded(self, path: str) -> bool:
        """Outside every root, or under an exclusion deeper than its root (a
        root inside an excluded folder, such as the run's worktrees inside the
        run's folder, is watched)."""
        if os.path.basename(path) in EXCLUDED_NAMES:
            return True
        root = max((len(r) for r in self.roots if _under(path, r)), default=-1)
        excl = max((len(e) for e in self.excluded if _under(path, e)), default=-1)
        return root < 0 or excl > root

    def _leads_to_root(self, path: str) -> bool:
        return any(_under(r, path) and r != path for r in self.roots)

    # --- adding watches -----------------------------------------------------------

    def _add(self, path: str, full: bool) -> bool:
        if path in self._wd and (self._full[self._wd[path]] or not full):
            return True
        try:
            wd = self._ino.add_watch(path, FULL_MASK if full else GUIDE_MASK)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                self.lost.append(
                    {
                        "kind": "lost",
                        "what": "files",
                        "why": "inotify watch limit reached (fs.inotify.max_user_watches)",
                        "lo": self._clock(),
                        "hi": None,
                        "path": path,
                    }
                )
            return False  # gone already (ENOENT, ENOTDIR): its deletion is reported
        self._path[wd], self._full[wd], self._wd[path] = path, full, wd
        return True

    def start(self) -> None:
        for root in self.roots:
            self._reach(root, None, None)

    def _reach(self, root: str, lo: float | None, out: list[dict[str, Any]] | None) -> None:
        """Watch `root`'s tree, or guide-watch its deepest existing ancestor."""
        if os.path.isdir(root):
            self.watch_tree(root, lo, out)
            return
        parent = os.path.dirname(root)
        while parent != os.path.dirname(parent) and not os.path.isdir(parent):
            parent = os.path.dirname(parent)
        self._add(parent, full=not self.is_excluded(parent))

    def watch_tree(self, top: str, lo: float | None, out: list[dict[str, Any]] | None) -> None:
        """Watch `top` and every directory below it that is not excluded. With
        `out`, also list what is there as created in `(lo, now]`."""
        stack = [top]
        while stack:
            here = stack.pop()
            if self.is_excluded(here):
                if self._leads_to_root(here):
                    self._add(here, full=False)
                    stack.extend(self._subdirs(here, only_toward_roots=True))
                continue
            if not self._add(here, full=True):
                continue
            try:
                entries = list(os.scandir(here))
            except OSError:
                continue
            for entry in entries:
                path = os.path.join(here, entry.name)
                is_dir = entry.is_dir(follow_symlinks=False)
                if out is not None and lo is not None and not self.is_excluded(path):
                    out.append(_change(path, ("create",), is_dir, lo, self._clock(), scan=True))
                if is_dir:
                    stack.append(path)

    def _subdirs(self, here: str, only_toward_roots: bool) -> Iterable[str]:
        try:
            entries = list(os.scandir(here))
        except OSError:
            return ()
        out = []
        for entry in entries:
            path = os.path.join(here, entry.name)
            if entry.is_dir(follow_symlinks=False) and (
                not only_toward_roots or self._leads_to_root(path) or path in self.roots
            ):
                out.append(path)
        return out

    def resync(self) -> None:
        """After an overflow: watch every directory that has none yet."""
        for root in self.roots:
            self._reach(root, None, None)

    # --- handling events ------------------------------------------------------------

    def handle(self, events: Sequence[Any], lo: float, hi: float) -> list[dict[str, Any]]:
        """One read's events, all known to have happened in `(lo, hi]`."""
        out: list[dict[str, Any]] = []
        merged: dict[str, tuple[list[str], bool]] = {}
        moved_dirs: dict[int, str] = {}
        for ev in events:
            if ev.mask & _F.Q_OVERFLOW:
                out.append(
                    {
                        "kind": "lost",
                        "what": "files",
                        "why": "inotify queue overflow (fs.inotify.max_queued_events)",
                        "lo": lo,
                        "hi": hi,
                        "path": None,
                    }
                )
                self.resync()
                continue
            base = self._path.get(ev.wd)
            if base is None:
                continue
            if ev.mask & _F.IGNORED:
                self._forget(ev.wd)
                continue
            path = os.path.join(base, ev.name) if ev.name else base
            is_dir = bool(ev.mask & _F.ISDIR)
            if not self._full[ev.wd]:
                # A guide watch: follow the way down to a root that appears.
                if is_dir and ev.mask & (_F.CREATE | _F.MOVED_TO):
                    self._enter(path, lo, out)
                continue
            if self.is_excluded(path):
                if is_dir and ev.mask & (_F.CREATE | _F.MOVED_TO):
                    self._enter(path, lo, out)
                else:
                    self.excluded_events += 1
                continue
            if not ev.name and ev.mask & (_F.DELETE_SELF | _F.MOVE_SELF) and base not in self.roots:
                continue  # its parent reports it
            ops = merged.setdefault(path, ([], is_dir))[0]
            for bit, name in OPS:
                if ev.mask & bit and name not in ops:
                    ops.append(name)
            if is_dir and ev.mask & (_F.CREATE | _F.MOVED_TO):
                old = moved_dirs.pop(ev.cookie, None) if ev.mask & _F.MOVED_TO else None
                if old is not None:
                    self._rename(old, path)
                else:
                    self.watch_tree(path, lo, out)
            elif is_dir and ev.mask & _F.MOVED_FROM:
                moved_dirs[ev.cookie] = path
        for old in moved_dirs.values():  # moved out of every watched tree
            for wd in [wd for p, wd in self._wd.items() if _under(p, old)]:
                self._drop(wd)
        changes = [_change(p, tuple(ops), d, lo, hi) for p, (ops, d) in merged.items()]
        lost, self.lost = self.lost, []
        return [*lost, *changes, *out]

    def _enter(self, path: str, lo: float, out: list[dict[str, Any]]) -> None:
        """A directory appeared where only a guide watch looks."""
        if not self.is_excluded(path):
            out.append(_change(path, ("create",), True, lo, self._clock()))
            self.watch_tree(path, lo, out)
        elif self._leads_to_root(path) and self._add(path, full=False):
            for sub in self._subdirs(path, only_toward_roots=True):
                self._enter(sub, lo, out)

    def _rename(self, old: str, new: str) -> None:
        for path, wd in list(self._wd.items()):
            if _under(path, old):
                moved = new + path[len(old) :]
                del self._wd[path]
                self._wd[moved], self._path[wd] = wd, moved

    def _forget(self, wd: int) -> None:
        path = self._path.pop(wd, None)
        self._full.pop(wd, None)
        if path is not None and self._wd.get(path) == wd:
            del self._wd[path]

    def _drop(self, wd: int) -> None:
        with contextlib.suppress(OSError):
            self._ino.rm_watch(wd)
        self._forget(wd)

    @property
    def watches(self) -> int:
        return len(self._path)


def _change(
    path: str, ops: tuple[str, ...], is_dir: bool, lo: float, hi: float, *, scan: bool = False
) -> dict[str, Any]:
    return {
        "kind": "change",
        "path": path,
        "ops": list(ops),
        "dir": is_dir,
        "lo": lo,
        "hi": hi,
        "scan": scan,
    }
