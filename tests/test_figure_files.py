"""Every figure is written as a PNG and an SVG beside it (maskbench.report.figure_files): both atomic, the SVG a
vector drawing of the same figure, and both the same bytes when written again (no date, fixed ids)."""

import xml.etree.ElementTree as ET

from matplotlib.figure import Figure

from maskbench.report.figure_files import save_figure, svg_beside


def drawn() -> Figure:
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.plot([0, 1, 2], [3, 1, 2], label="a line")
    ax.set_title("a title")
    ax.legend()
    return fig


def test_save_figure_writes_the_png_and_an_svg_beside_it_the_same_bytes_each_time(tmp_path):
    first, second = tmp_path / "a" / "fig.png", tmp_path / "b" / "fig.png"
    save_figure(drawn(), first, dpi=50)
    save_figure(drawn(), second, dpi=50)
    assert svg_beside(first) == tmp_path / "a" / "fig.svg"
    assert sorted(p.name for p in first.parent.iterdir()) == ["fig.png", "fig.svg"]  # no temporaries left
    assert first.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    root = ET.fromstring(svg_beside(first).read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # text is drawn as glyph paths; the title is in the SVG as vector shapes, not as a bitmap
    assert b"<image" not in svg_beside(first).read_bytes() and b"<path" in svg_beside(first).read_bytes()
    assert first.read_bytes() == second.read_bytes()
    assert svg_beside(first).read_bytes() == svg_beside(second).read_bytes()
