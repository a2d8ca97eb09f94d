"""metis_studies: studies that run the real runtime and check it against the model.

It imports `metis_model` and `metis_runtime` through their public surfaces
only (a test enforces it), so a study is evidence about the runtime, not
about our wiring of it. `explore`: model-driven workloads (`metis explore`).
"""

__all__: list[str] = []
