"""Option values checked before a command does any work.

- `FiniteFloat`: `click.FloatRange(min=0, min_open=True)` accepts `nan` (every
  comparison with NaN is false, so no bound fails) and `inf` / `1e400`; a
  timeout of NaN seconds then fails deep inside asyncio, or never fires. Here
  both are usage errors naming the option (exit 2).
- `StagedOutput`: an `--out` folder. A place that cannot be written is a
  one-line error before the work starts; the files are written into a
  temporary folder inside it and renamed into place only when the command
  succeeds, so a failure never leaves a half-written file. Each file is
  placed by the one writer of user-named paths (`write_named`): a FIFO, a
  device or a symlink already there under its name is written through.
- `write_named`: a file the user named (`--output FORMAT=PATH`, `--report`,
  `draw --out`), written by that same writer.
- `widths_timeout_option`: `--widths-timeout` of `metis prove` and `metis
  check`; a loaded machine may need more than the default for the all-widths
  queries, and on a timeout a row keeps its finite scope.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any
from typing import TypeVar

import click

from ._output import bad_input

_F = TypeVar("_F", bound=Callable[..., Any])
# metis_proofs.WIDTHS_TIMEOUT_S, kept here so that `--help` needs no z3 import
# (a test checks they agree).
WIDTHS_TIMEOUT_S = 10.0


def widths_timeout_option() -> Callable[[_F], _F]:
    return click.option(
        "--widths-timeout",
        default=WIDTHS_TIMEOUT_S,
        show_default=True,
        type=FiniteFloat(min=0),
        help="Seconds per all-widths query (the rule cutoff gets 3x); 0 skips them.",
    )


class FiniteFloat(click.FloatRange):
    """A `click.FloatRange` whose value must also be a finite number."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def writable_dir(path: Path, option: str = "--out") -> Path:
    """`path` as a folder this process can write into, or a one-line error."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".metis-probe-"):
            pass
    except OSError as exc:
        bad_input(f"{option} {path}: cannot write there ({exc.strerror or exc})")
    return path


class StagedOutput:
    """`with StagedOutput(out) as stage:` write into `stage`; on success every
    file is written to the same place under `out` (whole files or none; by
    `write_named_output`, so what is already there decides how)."""

    def __init__(self, target: Path, option: str = "--out") -> None:
        self.target = target
        self.option = option
        self.stage = target

    def __enter__(self) -> Path:
        writable_dir(self.target, self.option)
        self.stage = Path(tempfile.mkdtemp(prefix=".metis-out-", dir=self.target))
        return self.stage

    def final(self, path: Path) -> Path:
        """Where a file written under the stage ends up."""
        return self.target / path.relative_to(self.stage)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from metis_runtime._named_output import NamedOutputError
        from metis_runtime._named_output import write_named_output

        try:
            if kind is None:
                for item in sorted(self.stage.rglob("*")):
                    if item.is_file() and not item.is_symlink():
                        final = self.final(item)
                        final.parent.mkdir(parents=True, exist_ok=True)
                        write_named_output(final, item.read_bytes())
        except NamedOutputError as error:
            bad_input(f"{self.option} {error}")
        except OSError as error:
            reason = error.strerror or error
            bad_input(f"{self.option} {self.target}: cannot write there ({reason})")
        finally:
            shutil.rmtree(self.stage, ignore_errors=True)


def write_named(target: Path, data: bytes, option: str = "--out") -> None:
    """Write a file the user named, by what is there
    (`metis_runtime._named_output`): a new or regular file is replaced whole
    or not at all, a device or FIFO is written through, a symlink is
    followed; a directory or a failure is a one-line error naming `option`."""
    from metis_runtime._named_output import NamedOutputError
    from metis_runtime._named_output import write_named_output

    try:
        write_named_output(target, data)
    except NamedOutputError as exc:
        bad_input(f"{option} {exc}")
