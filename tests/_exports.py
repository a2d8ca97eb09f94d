"""What a package's `__all__` must list: every name it binds that is neither
private nor a submodule (tests/test_architecture.py checks the packages, and
the packages' own tests their surface)."""

from __future__ import annotations

from types import ModuleType


def assert_all_lists_the_public_names(module: ModuleType) -> None:
    # "@" names are the helpers pytest's assertion rewriting binds in a module it rewrote.
    public = {n for n in vars(module) if not n.startswith(("_", "@"))}
    submodules = {n for n, v in vars(module).items() if type(v).__name__ == "module"}
    assert set(module.__all__) == public - submodules
