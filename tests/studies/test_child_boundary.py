"""The child-boundary study inside a running event loop (a Jupyter kernel's
situation): awaited, and through the synchronous API from inside a loop."""

from __future__ import annotations

import asyncio

from metis_studies.child_boundary import run_child_boundary
from metis_studies.child_boundary import run_child_boundary_async


def test_it_is_awaited_inside_a_running_loop() -> None:
    async def cell() -> bool:
        cells = await run_child_boundary_async((0,))
        return all(c.ok for c in cells) and len(cells) == 4

    assert asyncio.run(cell())


def test_the_synchronous_api_works_inside_a_running_loop() -> None:
    async def cell() -> list[bool]:
        asyncio.get_running_loop()  # as in a kernel: asyncio.run() would refuse here
        return [c.ok for c in run_child_boundary((1,))]

    assert asyncio.run(cell()) == [True] * 4
