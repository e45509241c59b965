"""Checks a drawn matplotlib figure must pass: every title inside the canvas, every marker style drawn named in the
legend (and no legend marker that is not drawn). Used by the figure tests; matplotlib's Agg canvas, no pyplot."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.container import ErrorbarContainer
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle

NO_MARKER = ("None", "none", "", " ", None)


def drawn(fig) -> None:
    """Lay the figure out and draw it on an Agg canvas, as savefig does."""
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()


def outside_canvas(fig) -> list[str]:
    """The titles (figure suptitle, each axes' titles) whose bounding box is not inside the figure's."""
    drawn(fig)
    renderer, canvas = fig.canvas.get_renderer(), fig.bbox
    texts = [fig._suptitle] if fig._suptitle is not None else []
    texts += [t for ax in fig.axes for t in (ax.title, ax._left_title, ax._right_title)]
    bad = []
    for text in texts:
        if not text.get_text():
            continue
        box = text.get_window_extent(renderer)
        if box.x0 < canvas.x0 or box.x1 > canvas.x1 or box.y0 < canvas.y0 or box.y1 > canvas.y1:
            bad.append(text.get_text())
    return bad


def _shape(path) -> tuple:
    vertices = np.asarray(path.vertices, float)
    scale = np.abs(vertices).max() or 1.0
    return tuple(np.round(vertices / scale, 3).ravel())


def marker_style(artist) -> tuple | None:
    """(shape, filled) of the marker an artist draws: a Line2D's marker or a scatter's path; None for none."""
    if isinstance(artist, ErrorbarContainer):
        artist = artist.lines[0]  # the data line; None for error bars drawn alone (fmt="none")
    if isinstance(artist, Line2D):
        if artist.get_marker() in NO_MARKER:
            return None
        style = MarkerStyle(artist.get_marker())
        filled = str(artist.get_markerfacecolor()).lower() != "none" and artist.get_fillstyle() != "none"
        return _shape(style.get_path().transformed(style.get_transform())), filled
    if isinstance(artist, PathCollection):
        faces = artist.get_facecolor()
        filled = len(faces) > 0 and bool(np.any(np.asarray(faces)[:, 3] > 0))
        return _shape(artist.get_paths()[0]), filled
    return None


def marker_styles_drawn(ax) -> set[tuple]:
    """The marker styles the axes draw with data: error bars' data lines, plain lines, scatters with points."""
    caps = {id(line) for c in ax.containers if isinstance(c, ErrorbarContainer) for line in c.lines[1]}
    styles = {marker_style(c) for c in ax.containers
              if isinstance(c, ErrorbarContainer) and c.lines[0] is not None and len(c.lines[0].get_xdata())}
    styles |= {marker_style(line) for line in ax.lines if id(line) not in caps and len(line.get_xdata())}
    styles |= {marker_style(coll) for coll in ax.collections
               if isinstance(coll, PathCollection) and len(coll.get_offsets())}
    return styles - {None}


def marker_styles_named(ax) -> set[tuple]:
    """The marker styles of the axes' legend entries (the artists behind the labels its legend shows; none
    without a legend)."""
    legend = ax.get_legend()
    if legend is None:
        return set()
    shown = {t.get_text() for t in legend.get_texts()}
    handles, labels = ax.get_legend_handles_labels()
    return {marker_style(h) for h, label in zip(handles, labels, strict=True) if label in shown} - {None}


def unnamed_marker_styles(fig) -> set[tuple]:
    """Marker styles drawn in some axes of the figure that no legend of the figure names (an axes' legend, or a
    figure legend shared by the panels)."""
    drawn(fig)
    styles = set().union(*(marker_styles_drawn(ax) for ax in fig.axes))
    named = set().union(*(marker_styles_named(ax) for ax in fig.axes))
    named |= {marker_style(h) for legend in fig.legends for h in legend.legend_handles}
    return styles - named
