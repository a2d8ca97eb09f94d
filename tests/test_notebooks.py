"""Every notebook opens and runs in Jupyter: each `.py` (percent format) is
paired with its `.ipynb` by jupytext, the two agree and the `.ipynb` holds no
outputs, and the `.ipynb` runs top to bottom in a real IPython kernel
(nbclient), whose cells run inside the kernel's event loop (their own asserts
hold)."""

from __future__ import annotations

from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parent.parent / "notebooks"
SOURCES = sorted(FOLDER.glob("*.py"))

jupytext = pytest.importorskip("jupytext", reason="the notebooks need the 'studies' extra")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


def _code(nb: object) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]  # type: ignore[attr-defined]


def test_every_notebook_is_paired() -> None:
    assert SOURCES, "no notebooks"
    assert sorted(p.stem for p in FOLDER.glob("*.ipynb")) == [p.stem for p in SOURCES]


@pytest.mark.parametrize("source", SOURCES, ids=[n.stem for n in SOURCES])
def test_the_pair_agrees_and_the_ipynb_has_no_outputs(source: Path) -> None:
    py = jupytext.read(source)
    ipynb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    assert _code(py) == _code(ipynb), f"run: jupytext --sync {source}"
    assert ipynb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    for cell in ipynb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "strip the outputs"


@pytest.mark.parametrize("source", SOURCES, ids=[n.stem for n in SOURCES])
def test_notebook_runs_in_a_kernel(source: Path, tmp_path: Path) -> None:
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError, with the cell's traceback, on a failure
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, "no figure was shown"
