# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Permission modes over the whole fact space
#
# The reference model's `resolve` is a pure function of finitely many facts
# (once rules are abstracted to their behaviour, source and recency). This
# notebook (over `metis_studies.permission_modes`; `metis study
# permission-modes` writes the same) enumerates the fact space, tabulates
# decisions per mode, checks the mode order empirically, draws the mode ×
# fact decision maps, and runs one ablation: what changes if rules were
# resolved *authority first* (the strongest rule of any behaviour wins)
# instead of *deny first* (specs/permissions.md).

# %%
import tempfile
from pathlib import Path

from IPython.display import Image, display

from metis_model import DECISION_RANK, resolve
from metis_trace import Decision, Mode
from metis_studies.permission_modes import authority_first, fact_space, permission_modes
from metis_studies.report import decision_maps_figure, loosened_figure

result = permission_modes()
size = result.combinations_per_mode
print(f"fact combinations per mode: {size}")
print(f"{'mode':<20}" + "".join(f"{d.value:>8}" for d in Decision))
for mode, counts in result.decisions:
    print(f"{mode.value:<20}" + "".join(f"{n:>8}" for _, n in counts))

# %% [markdown]
# ## The mode order, checked pointwise
#
# For every pair `child ≤ parent` of the partial order, the child's decision is
# never more permissive on any fact combination.

# %%
print(f"ordered pairs checked: {result.ordered_pairs}; violations: {result.order_violations}")
assert result.order_violations == 0

# %% [markdown]
# ## Decision maps: mode × fact
#
# Columns are the tool kind with `+P` protected, `+S` secret, `+O` out of
# scope; each panel is one rule situation.

# %%
figures = Path(tempfile.mkdtemp(prefix="metis-notebook-"))
png, _svg = decision_maps_figure(result.maps, figures / "decision-maps")
display(Image(filename=str(png)))

# %% [markdown]
# ## Ablation: authority-first rule resolution
#
# Instead of "any deny wins, then any ask, then any allow", let the single
# strongest rule (highest authority, then most recent) decide whatever its
# behaviour. Count how often that would *allow* what deny-first denies.

# %%
for mode, n in result.loosened:
    print(f"{mode.value:<20} authority-first loosens {n:>6} of {size} decisions")
assert sum(n for _, n in result.loosened) > 0  # the ablation matters: deny-first is strictly safer

example = next(
    f for f in fact_space(Mode.DEFAULT)
    if DECISION_RANK[authority_first(f)] > DECISION_RANK[resolve(f).decision]
)
print("one loosened case:", example)
print("deny-first:", resolve(example).decision.value, "| authority-first:", authority_first(example).value)
png, _svg = loosened_figure(result, figures / "ablation")
display(Image(filename=str(png)))
