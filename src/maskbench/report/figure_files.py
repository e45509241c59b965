"""Every figure's files: the PNG a rule declares and the same figure as SVG beside it (same name, `.svg`), for
papers and slides that need a vector version. Both are written atomically; the SVG carries no date and fixed element
ids, so that a rerun writes the same bytes."""

from __future__ import annotations

from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from maskbench.runtime import atomic_path

# matplotlib's SVG ids hash this salt instead of a random one
SVG_SALT = "maskbench"


def svg_beside(png: str | Path) -> Path:
    """The SVG written beside a figure's PNG."""
    return Path(png).with_suffix(".svg")


def save_figure(figure: Figure, png: str | Path, dpi: int) -> None:
    """``figure`` as a PNG at ``png`` (at ``dpi``) and as an SVG beside it (``svg_beside``); missing parent folders
    are created."""
    with atomic_path(png) as tmp:
        figure.savefig(tmp, dpi=dpi, format="png")
    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT}), atomic_path(svg_beside(png)) as tmp:
        figure.savefig(tmp, dpi=dpi, format="svg", metadata={"Date": None})
