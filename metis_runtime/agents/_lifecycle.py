"""`ChildLifecycle`: a spawned child from start to end — its process (in its
own process group) or inline task, the watcher that kills its group at the
timeout, reading back its result (or its stderr's tail), releasing its guard
slot and keeping or removing its workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from typing import Any

from metis_trace import InputError

from .._input import read_input_json
from .._lifeline import die_with_parent
from .._private import default_redactor
from .._private import open_private
from ._config import ChildConfig
from ._process import register_group
from ._process import sanitized_env
from ._process import signal_group
from ._process import unregister_group
from ._records import ChildRecord
from ._supervisor_state import SupervisorState
from ._worktree import WorkspaceError
from ._worktree import changed_files
from ._worktree import printable

__all__ = ["CHILD_MODULE", "KILL_GRACE_S", "ChildLifecycle"]

CHILD_MODULE = "metis_runtime.agents._child"
KILL_GRACE_S = 2.0
_STDERR_WINDOW = 1 << 16  # bytes of a child's stderr.log read back for its error


class ChildLifecycle(SupervisorState):
    """Starting, watching, terminating and finishing an agent's children."""

    async def _start(self, record: ChildRecord, config: ChildConfig) -> None:
        env = sanitized_env(self.env, config.agent.env)
        log = open_private(record.agent_dir / "stderr.log", os.O_WRONLY | os.O_APPEND)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.python,
                "-m",
                CHILD_MODULE,
                str(record.agent_dir / "config.json"),
                cwd=str(record.workspace.path),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # its own process group: pgid == pid
                preexec_fn=die_with_parent,  # dies with us, even on SIGKILL
            )
        finally:
            os.close(log)
        record.process = proc
        record.pid = proc.pid
        record.status = "running"
        register_group(proc.pid)
        await asyncio.to_thread(self.ledger.started, record.agent_id, proc.pid)

    def _start_inline(self, record: ChildRecord, config: ChildConfig) -> None:
        assert self.inline is not None
        record.inline = asyncio.ensure_future(self.inline(config, env=self.env))
        record.status = "running"
        self.ledger.started(record.agent_id, os.getpid())

    async def _exited(self, record: ChildRecord) -> None:
        if record.process is not None:
            await record.process.wait()
        elif record.inline is not None:
            await asyncio.wait({record.inline})  # never raises: the task's outcome stays in it

    def _returncode(self, record: ChildRecord) -> int | None:
        if record.process is not None:
            return record.process.returncode
        task = record.inline
        if task is None or not task.done() or task.cancelled():
            return None
        if task.exception() is not None:
            record.error = record.error or f"{type(task.exception()).__name__}: {task.exception()}"
            return 1
        return 0 if task.result().status.value == "completed" else 1

    async def _watch(self, record: ChildRecord) -> None:
        remaining = self.limits.timeout_s - (time.monotonic() - record.started)
        try:
            await asyncio.wait_for(self._exited(record), timeout=max(remaining, 0.01))
        except TimeoutError:
            record.kill_reason = record.kill_reason or "timed_out"
            await self._terminate(record)
        except asyncio.CancelledError:
            record.kill_reason = record.kill_reason or "cancelled"
            await self._terminate(record)
            self._collect(record, self._returncode(record))
            self._finish(record)
            raise
        self._collect(record, self._returncode(record))
        self._finish(record)

    async def _terminate(self, record: ChildRecord) -> None:
        if record.inline is not None:
            record.inline.cancel()
            await asyncio.wait({record.inline}, timeout=KILL_GRACE_S)
            return
        proc = record.process
        if proc is None or proc.returncode is not None:
            return
        signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
        except TimeoutError:
            signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()
        # Whatever of its group outlived it goes too.
        signal_group(proc.pid, signal.SIGKILL)

    def _collect(self, record: ChildRecord, returncode: int | None) -> None:
        data: dict[str, Any] = {}
        with contextlib.suppress(InputError):  # no result (or a bad one): the status says why
            loaded = read_input_json(record.agent_dir / "result.json")
            if isinstance(loaded, dict):
                data = loaded
        record.text = str(data.get("text", ""))
        turns = data.get("turns", 0)
        record.turns = turns if type(turns) is int and turns >= 0 else 0
        status = str(data.get("status", ""))
        if record.kill_reason is not None:
            record.status = record.kill_reason
            record.error = record.error or {
                "timed_out": f"killed after the {self.limits.timeout_s:g} s timeout",
                "cancelled": "cancelled with its parent's call",
                "killed": "killed by its parent",
            }.get(record.kill_reason, record.kill_reason)
        elif status == "completed" and returncode == 0:
            record.status = "completed"
        else:
            # A child that ended any other way (interrupted, crashed) failed.
            record.status = "cancelled" if status == "cancelled" else "failed"
            record.error = str(data.get("error") or "") or self._stderr_tail(record, returncode)

    @staticmethod
    def _stderr_tail(record: ChildRecord, returncode: int | None) -> str:
        try:
            with open(record.agent_dir / "stderr.log", "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - _STDERR_WINDOW))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            tail = ""
        # Redacted before it is cut, so the cut never shows a credential's tail.
        last = " ".join(default_redactor().text(tail).split())[-200:]
        return f"exit status {returncode}" + (f": {last}" if last else "")

    def _finish(self, record: ChildRecord) -> None:
        record.ended = time.monotonic()
        if record.process is not None:
            unregister_group(record.process.pid)
        self.ledger.finished(record.agent_id)
        if record.status == "completed":
            with contextlib.suppress(WorkspaceError, OSError):
                record.changed = tuple(printable(p) for p in changed_files(record.workspace))
            self.workspaces.keep(record.agent_id, record.workspace)
        else:
            with contextlib.suppress(WorkspaceError, OSError):
                self.workspaces.drop(record.workspace)
        record.done.set()

    async def _await_child(self, record: ChildRecord) -> None:
        try:
            await record.done.wait()
        except asyncio.CancelledError:
            # The parent's call was cancelled: the child goes with it.
            record.kill_reason = "cancelled"
            if record.watcher is not None:
                record.watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await record.watcher
            raise
