"""Reading `dot`'s SVG back: each node, edge and cluster by its id, classes and text.

The drawing module puts classes on every element (`item decision allow
violation`, `link overlap`, `group agent`, `legend-item`), which graphviz
copies onto the element's `<g>`; these helpers let a test ask what a picture
shows without comparing pixels.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import attrs

SVG = "{http://www.w3.org/2000/svg}"


@attrs.frozen
class Element:
    id: str
    classes: frozenset[str]
    text: tuple[str, ...]

    @property
    def label(self) -> str:
        return "\n".join(self.text)


@attrs.frozen
class Picture:
    elements: tuple[Element, ...]

    def having(self, *classes: str) -> list[Element]:
        return [e for e in self.elements if set(classes) <= e.classes]

    @property
    def items(self) -> list[Element]:
        """The figure's nodes (not the legend's samples)."""
        return self.having("node", "item")

    @property
    def violating(self) -> list[Element]:
        return self.having("node", "item", "violation")

    @property
    def slice(self) -> list[Element]:
        return self.having("node", "item", "slice")

    @property
    def legend(self) -> list[str]:
        """What the legend says, line by line."""
        return [e.label for e in self.elements if e.classes & {"legend-item", "legend-link"}]

    def by_id(self, element_id: str) -> Element:
        return next(e for e in self.elements if e.id == element_id)


def read_svg(svg: str | bytes) -> Picture:
    root = ET.fromstring(svg)
    out = []
    for g in root.iter(f"{SVG}g"):
        classes = frozenset(g.get("class", "").split())
        if not classes or "graph" in classes:
            continue
        text = tuple((t.text or "").strip() for t in g.iter(f"{SVG}text"))
        out.append(Element(g.get("id", ""), classes, text))
    return Picture(tuple(out))
