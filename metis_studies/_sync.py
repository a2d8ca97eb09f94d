"""Running a study's coroutine from synchronous code, inside or outside a loop.

A Jupyter kernel runs its cells inside an event loop, where `asyncio.run()`
refuses to start (it would nest loops). `run_sync` runs the coroutine on a
loop of its own: in this thread when none is running, else in a worker
thread, so a study's synchronous API works from a script and from a kernel
alike. Inside a kernel, prefer `await study_async(...)`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any
from typing import TypeVar

T = TypeVar("T")


def in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, or the same on a worker thread when this thread's
    loop is running (a notebook cell)."""
    if not in_running_loop():
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="metis-study") as pool:
        return pool.submit(asyncio.run, coro).result()
