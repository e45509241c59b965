"""Every figure plots its table: each test builds a figure from a small hand-made table and reads the values
back from the Figure's artists (bars, error bars, markers, lines, bands, images, tick labels, legends).

Plotted values are compared with the table at rtol 1e-12; positions on a categorical axis (bar centres) at
atol 1e-12, since they are layout arithmetic rather than table values.
"""

import math

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgb
from matplotlib.container import BarContainer, ErrorbarContainer

from maskbench.tracks.nlu.report.figure_id_ood import FIGURE_COLUMNS, build_id_ood_figure
from maskbench.tracks.nlu.report.pruning_rates import TABLE_COLUMNS, build_pruning_heatmaps_figure
from maskbench.tracks.nlu.report.sparsity_curves import CURVE_COLUMNS, build_curves_figure
from maskbench.tracks.vision.report.figures import (
    build_layer_sparsity_figure,
    build_magnitude_vs_ffw_figure,
    build_samples_figure,
)

NAN = math.nan


def close(actual, expected):
    np.testing.assert_allclose(np.asarray(actual, float), np.asarray(expected, float), rtol=1e-12, atol=0)


def texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


def bars(ax) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def errorbars(ax) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def centres(container: BarContainer) -> np.ndarray:
    return np.array([p.get_x() + p.get_width() / 2 for p in container])


def heights(container: BarContainer) -> np.ndarray:
    return np.array([p.get_height() for p in container])


def error_segments(container: ErrorbarContainer) -> np.ndarray:
    """All error-bar segments of a container, (n, 2, 2): [[x0, y0], [x1, y1]] each; a NaN error draws none."""
    segs = [s for coll in container.lines[2] for s in coll.get_segments() if len(s)]
    return np.array(segs, float).reshape(-1, 2, 2)


def vertical(xs, lo, hi) -> np.ndarray:
    return np.array([[[x, a], [x, b]] for x, a, b in zip(xs, lo, hi, strict=True)], float).reshape(-1, 2, 2)


def horizontal(ys, lo, hi) -> np.ndarray:
    return np.array([[[a, y], [b, y]] for y, a, b in zip(ys, lo, hi, strict=True)], float).reshape(-1, 2, 2)


# ---------------------------------------------------------------------------------------------------
# Table 1's ID-vs-OOD bars (figures.build_id_ood_figure)

ID_OOD = pd.DataFrame.from_records(
    [
        # task, column, column_label, eval_set, metric, row, row_label, mean, std, n_seeds, paper, data
        ("mnli", "mnli_val", "Val.", "mnli_dev", "accuracy", "baseline", "Baseline", 82.0, 2.5, 2, 84.38, "real"),
        ("mnli", "hans", "HANS", "hans", "accuracy", "baseline", "Baseline", 56.25, 1.5, 2, NAN, "real"),
        ("mnli", "mnli_val", "Val.", "mnli_dev", "accuracy", "md", "Underparam. MD", 79.0, NAN, 1, 82.24, "real"),
        ("mnli", "hans", "HANS", "hans", "accuracy", "md", "Underparam. MD", 66.5, NAN, 1, 67.86, "real"),
        ("mnli", "mnli_val", "Val.", "mnli_dev", "accuracy", "poe", "PoE", 81.125, 0.75, 3, NAN, "real"),
        ("qqp", "qqp_val", "Val.", "qqp_dev", "accuracy", "baseline", "Baseline", 90.0, 0.25, 2, 92.07, "synthetic"),
        ("qqp", "paws_f1", "PAWS", "paws", "weighted_f1", "baseline", "Baseline", 33.0, 4.0, 2, NAN, "synthetic"),
    ],
    columns=FIGURE_COLUMNS,
)


def test_id_ood_titles_fit_the_canvas_and_the_paper_diamond_is_named():
    """The suptitle and each panel's title lie inside the canvas (a one-line suptitle lost its first and last
    letters on the 6-inch canvas), and every marker drawn (paper A's diamond) is in the panel's legend."""
    from figure_checks import marker_styles_drawn, marker_styles_named, outside_canvas

    fig = build_id_ood_figure(ID_OOD)
    assert outside_canvas(fig) == []
    for ax in fig.axes:
        assert len(marker_styles_drawn(ax)) == 1 and marker_styles_drawn(ax) == marker_styles_named(ax)


def test_id_ood_bars_error_bars_and_paper_markers_are_the_table():
    fig = build_id_ood_figure(ID_OOD)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["MNLI", "synthetic QQP"]  # the kind of each panel's data
    expected_panels = {
        "mnli": (["baseline", "md", "poe"], ["mnli_val", "hans"], "accuracy (%)"),
        "qqp": (["baseline"], ["qqp_val", "paws_f1"], "score (%)"),
    }
    for ax, (task, (rows, columns, ylabel)) in zip(axes, expected_panels.items(), strict=True):
        part = ID_OOD[ID_OOD["task"] == task]
        cell = part.set_index(["row", "column"])
        assert texts(ax.get_xticklabels()) == [cell.xs(r, level="row")["row_label"].iloc[0] for r in rows]
        close(ax.get_xticks(), range(len(rows)))
        assert ax.get_ylabel() == ylabel
        width = 0.8 / len(columns)
        scatters, n_bars, n_err = [], 0, 0
        containers = list(ax.containers)
        for j, name in enumerate(columns):
            pos = np.arange(len(rows)) - 0.4 + width * (j + 0.5)
            means, stds, papers = (
                np.array([cell[key].get((r, name), NAN) for r in rows], float)
                for key in ("mean", "std", "paper")
            )
            bar = containers.pop(0)
            assert isinstance(bar, BarContainer)
            np.testing.assert_allclose(centres(bar), pos, rtol=0, atol=1e-12)
            close(heights(bar), means)  # a row without this column: a NaN (invisible) bar
            n_bars += len(bar)
            has_err = ~np.isnan(means) & ~np.isnan(stds)
            if has_err.any():
                err = containers.pop(0)
                assert isinstance(err, ErrorbarContainer) and err.lines[0] is None  # fmt="none": bars only
                segs = error_segments(err)
                close(segs, vertical(pos[has_err], (means - stds)[has_err], (means + stds)[has_err]))
                n_err += 1
            if not np.all(np.isnan(papers)):
                scatters.append((pos, papers))
        assert containers == []  # nothing beyond one bar set (and its error bars) per column
        assert len(ax.patches) == n_bars
        markers = [c for c in ax.collections if c not in {lc for e in errorbars(ax) for lc in e.lines[2]}]
        assert len(markers) == len(scatters)
        assert len(ax.collections) == n_err + len(scatters)
        for coll, (pos, papers) in zip(markers, scatters, strict=True):
            # a cell without a paper figure: a masked (undrawn) marker
            offsets = np.ma.filled(np.ma.asarray(coll.get_offsets(), float), NAN)
            np.testing.assert_allclose(
                offsets[:, 0], np.where(np.isnan(papers), NAN, pos), rtol=0, atol=1e-12
            )
            close(offsets[:, 1], papers)
        assert len(ax.lines) == 2 * n_err  # the error bars' caps, no other line
        labels = [bar.get_label() for bar in bars(ax)]
        assert sorted(texts(ax.get_legend().get_texts())) == sorted(labels + ["paper A"] * bool(scatters))
    assert [bar.get_label() for bar in bars(axes[0])] == ["Val.", "HANS"]
    assert [bar.get_label() for bar in bars(axes[1])] == ["Val.", "PAWS [weighted f1]"]


# ---------------------------------------------------------------------------------------------------
# paper C's curves (sparsity_curves.build_curves_figure)


def curve_frame(lines) -> pd.DataFrame:
    """A curve table from (paradigm, method, loss, task, eval_set, x, mean, std, metric) tuples."""
    return pd.DataFrame.from_records(
        [(*line[:8], 2, line[8]) for line in lines], columns=[*CURVE_COLUMNS, "metric"]
    )


CURVES = curve_frame(
    [
        ("ft", "mask_train", "poe", "mnli", "hans", 0.9, 60.5, 1.25, "accuracy"),
        ("ft", "mask_train", "poe", "mnli", "hans", 0.2, 66.0, 0.5, "accuracy"),
        ("ft", "mask_train", "poe", "mnli", "hans", 0.5, 64.25, 0.0, "accuracy"),
        ("ft", "imp", "ce", "mnli", "hans", 0.2, 62.0, 2.0, "accuracy"),
        ("ft", "imp", "ce", "mnli", "hans", 0.7, 57.5, 1.0, "accuracy"),
        ("ft", "mask_train", "poe", "mnli", "validation_matched", 0.2, 84.0, 0.25, "accuracy"),
        ("ft", "mask_train", "poe", "mnli", "validation_matched", 0.7, 80.5, 0.75, "accuracy"),
        ("ft", "imp", "", "qqp", "paws_qqp", 0.5, 40.0, 3.0, "accuracy"),
        ("ft", "imp", "", "qqp", "paws_qqp", 0.9, 31.0, 2.0, "accuracy"),
        ("ft", "imp", "", "qqp", "paws_qqp", 0.5, 35.5, 2.5, "weighted_f1"),
    ]
)
REFERENCE = pd.DataFrame.from_records(
    [
        ("mnli", "hans", "accuracy", 70.0, 1.5),
        ("mnli", "validation_matched", "accuracy", 85.0, 0.0),
        ("qqp", "paws_qqp", "accuracy", 45.0, NAN),
        ("qqp", "paws_qqp", "weighted_f1", 38.0, 0.5),
        ("qqp", "validation", "accuracy", 88.0, 0.5),  # no panel: drawn nowhere
    ],
    columns=["task", "eval_set", "metric", "mean", "std"],
)


def band_points(coll) -> np.ndarray:
    """The distinct (x, y) corners of a fill_between band."""
    return np.unique(np.concatenate([p.vertices for p in coll.get_paths()]), axis=0)


def assert_curves(fig, table, panels, x="sparsity", scale=100.0, reference=None):
    """Each panel of ``fig`` (title, task, eval_set, metric) shows exactly the lines of ``table`` there: one per
    (paradigm, method, loss), x ascending (times ``scale``), y the mean, a band mean ± std, and the reference's
    dashed line and ±std band where it has a line for the panel."""
    assert [ax.get_title() for ax in fig.axes] == [title for title, *_ in panels]
    style = {}
    for ax, (_, task, eval_set, metric) in zip(fig.axes, panels, strict=True):
        part = table[(table.task == task) & (table.eval_set == eval_set) & (table.metric == metric)]
        keys = list(dict.fromkeys(zip(part.paradigm, part.method, part.loss, strict=True)))
        drawn = [line for line in ax.lines if line.get_linestyle() == "-"]
        assert [line.get_label() for line in drawn] == [" · ".join(p for p in key if p) for key in keys]
        assert len(ax.collections) == len(keys)  # one band per line
        for line, band, key in zip(drawn, ax.collections, keys, strict=True):
            points = part[(part.paradigm == key[0]) & (part.method == key[1]) & (part.loss == key[2])]
            points = points.sort_values(x)
            xs = points[x].to_numpy(float) * scale
            mean, std = points["mean"].to_numpy(float), points["std"].to_numpy(float)
            close(line.get_xdata(), xs)
            close(line.get_ydata(), mean)
            corners = np.unique(np.concatenate([np.c_[xs, mean - std], np.c_[xs, mean + std]]), axis=0)
            close(band_points(band), corners)
            assert to_rgb(band.get_facecolor()[0]) == to_rgb(line.get_color())
            assert style.setdefault(line.get_label(), (line.get_color(), line.get_marker())) == (
                line.get_color(),
                line.get_marker(),
            )  # a line keeps its colour and marker in every panel
        refs = (
            reference[
                (reference.task == task) & (reference.eval_set == eval_set) & (reference.metric == metric)
            ]
            if reference is not None
            else reference
        )
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert len(ax.lines) == len(drawn) + len(dashed)
        assert len(dashed) == (0 if refs is None else len(refs))
        spans = []
        for line, ref in zip(dashed, [] if refs is None else refs.itertuples(), strict=True):
            assert line.get_label() == "full model"
            close(line.get_ydata(), [ref.mean, ref.mean])
            if ref.std > 0:
                spans.append((ref.mean - ref.std, ref.mean + ref.std))
        assert len(ax.patches) == len(spans)  # a ±std band only where the reference has a std
        for patch, (lo, hi) in zip(ax.patches, spans, strict=True):
            corners = patch.get_patch_transform().transform(patch.get_path().vertices)
            close([corners[:, 1].min(), corners[:, 1].max()], [lo, hi])
        assert not ax.images and not ax.containers
    assert len({colour for colour, _ in style.values()}) == len(style)  # one colour per line (up to 10 lines)
    (legend,) = fig.legends
    for label, handle in zip(texts(legend.get_texts()), legend.legend_handles, strict=True):
        if label != "full model":
            assert (handle.get_color(), handle.get_marker()) == style[label]
    return texts(legend.get_texts())


SPARSITY_PANELS = [
    ("MNLI · hans", "mnli", "hans", "accuracy"),
    ("MNLI · validation_matched", "mnli", "validation_matched", "accuracy"),
    ("QQP · paws_qqp [accuracy]", "qqp", "paws_qqp", "accuracy"),
    ("QQP · paws_qqp [weighted_f1]", "qqp", "paws_qqp", "weighted_f1"),
]


def test_sparsity_curves_are_the_table_with_its_reference():
    fig = build_curves_figure(CURVES, reference=REFERENCE)
    legend = assert_curves(fig, CURVES, SPARSITY_PANELS, reference=REFERENCE)
    assert legend == ["ft · mask_train · poe", "ft · imp · ce", "full model", "ft · imp"]
    assert all(ax.get_xlabel() == "sparsity (%)" for ax in fig.axes)
    assert [ax.get_ylabel() for ax in fig.axes] == ["accuracy"] * 3 + ["weighted f1"]


def test_sparsity_curves_without_reference_and_with_selected_panels():
    fig = build_curves_figure(CURVES)
    assert assert_curves(fig, CURVES, SPARSITY_PANELS) == [
        "ft · mask_train · poe",
        "ft · imp · ce",
        "ft · imp",
    ]
    fig = build_curves_figure(
        CURVES, reference=REFERENCE, panels=[("mnli", "validation_matched"), ("mnli", "hans")]
    )
    legend = assert_curves(fig, CURVES, [SPARSITY_PANELS[1], SPARSITY_PANELS[0]], reference=REFERENCE)
    # no entry for the qqp line, which is in no panel shown
    assert legend == ["ft · mask_train · poe", "full model", "ft · imp · ce"]


def test_sparsity_in_percent_is_drawn_as_given_for_every_line():
    # a table in percent: the line that only reaches 1 % is not a fraction to scale (one scale per table)
    table = curve_frame(
        [
            ("ft", "mask_train", "ce", "mnli", "hans", 0.5, 70.0, 0.5, "accuracy"),
            ("ft", "mask_train", "ce", "mnli", "hans", 1.0, 69.0, 1.0, "accuracy"),
            ("ft", "imp", "ce", "mnli", "hans", 50.0, 60.0, 2.0, "accuracy"),
            ("ft", "imp", "ce", "mnli", "hans", 90.0, 50.0, 1.5, "accuracy"),
        ]
    )
    assert_curves(build_curves_figure(table), table, [SPARSITY_PANELS[0]], scale=1.0)


def test_timing_curves_are_the_table():
    rows = [line for line in CURVES.itertuples(index=False) if line.task == "mnli"]
    table = pd.DataFrame(rows).rename(columns={"sparsity": "start_step"})
    # steps up to 20000: drawn as given, not scaled
    table["start_step"] = table["start_step"].map({0.2: 0, 0.5: 2000, 0.7: 5000, 0.9: 20000})
    fig = build_curves_figure(table, x="start_step", reference=REFERENCE)
    legend = assert_curves(fig, table, SPARSITY_PANELS[:2], x="start_step", scale=1.0, reference=REFERENCE)
    assert legend == ["ft · mask_train · poe", "ft · imp · ce", "full model"]
    assert all(ax.get_xlabel() == "fine-tuning step at search start" for ax in fig.axes)


# ---------------------------------------------------------------------------------------------------
# paper A's pruning-rate heatmaps (pruning_rates.build_pruning_heatmaps_figure)

KINDS = ["query", "key", "value", "attention_output", "ffn_in", "ffn_out"]
HEAT = pd.DataFrame.from_records(
    [
        ("mnli", "baseline", 1, "query", 12.5, 1.0, 2),
        ("mnli", "baseline", 0, "query", 25.0, 0.5, 2),
        ("mnli", "baseline", 0, "key", 33.25, 0.0, 2),
        ("mnli", "baseline", 0, "ffn_out", 75.5, 2.0, 2),
        ("mnli", "baseline", 1, "ffn_in", 91.75, 1.0, 2),  # (layer 1, key) and others missing: grey, no text
        ("mnli", "baseline", -1, "overall", 40.0, 0.5, 2),
        *[
            ("qqp", "md_underparam", layer, kind, 10.0 * layer + k, 0.0, 1)
            for layer in range(3)
            for k, kind in enumerate(KINDS)
        ],
        ("qqp", "md_underparam", -1, "overall", 13.5, 0.0, 1),
        ("mnli", "poe", 0, "value", 5.0, 0.0, 1),  # no overall line: no "(overall ...)" in the title
    ],
    columns=TABLE_COLUMNS,
)


def test_pruning_heatmaps_are_the_table():
    fig = build_pruning_heatmaps_figure(HEAT)
    panels = [ax for ax in fig.axes if ax.images]
    (colourbar,) = [ax for ax in fig.axes if not ax.images]  # and the empty fourth grid cell is gone
    assert colourbar.get_ylabel() == "pruned weights (%, mean over seeds)"
    expected_titles = [
        "MNLI · Baseline\n(overall 40.0% pruned)",
        "QQP · Underparam. MD\n(overall 13.5% pruned)",
        "MNLI · poe",
    ]
    assert [ax.get_title() for ax in panels] == expected_titles
    vmax = HEAT.loc[HEAT.kind != "overall", "pruned_mean"].max()
    for ax, (task, row) in zip(
        panels, [("mnli", "baseline"), ("qqp", "md_underparam"), ("mnli", "poe")], strict=True
    ):
        part = HEAT[(HEAT.task == task) & (HEAT.row == row) & (HEAT.kind != "overall")]
        layers = sorted(part.layer.unique())
        expected = np.full((len(KINDS), len(layers)), NAN)
        for line in part.itertuples():
            expected[KINDS.index(line.kind), layers.index(line.layer)] = line.pruned_mean
        (image,) = ax.images
        assert not (ax.lines or ax.collections or ax.patches)
        shown = image.get_array()
        close(np.ma.filled(shown.astype(float), NAN), expected)
        np.testing.assert_array_equal(np.ma.getmaskarray(shown), np.isnan(expected))
        assert (image.norm.vmin, image.norm.vmax) == (0.0, vmax)  # one colour scale for all panels
        annotations = {(t.get_position(), t.get_text()) for t in ax.texts}
        assert len(annotations) == len(ax.texts)
        assert annotations == {
            ((j, i), f"{v:.1f}") for (i, j), v in np.ndenumerate(expected) if not np.isnan(v)
        }
        assert texts(ax.get_xticklabels()) == [str(layer + 1) for layer in layers]
        assert texts(ax.get_yticklabels()) == ["Q", "K", "V", "Attn out", "FFN in", "FFN out"]


# ---------------------------------------------------------------------------------------------------
# paper D's figures (vision_figures)

SUMMARY = pd.DataFrame.from_records(
    [
        # dataset, level, start, method, gamma, sparsity mean/std, task accuracy mean/std, bias accuracy mean/std
        ("bm", "0.99", "final", "magnitude", NAN, 80.0, 0.0, 30.0, 2.0, 70.0, 4.0),
        ("bm", "0.99", "final", "vanilla", NAN, 0.0, 0.0, 40.0, 1.0, 90.0, 0.5),
        ("bm", "0.99", "final", "magnitude", NAN, 50.0, 0.0, 38.0, 1.5, 85.0, 1.0),
        ("bm", "0.99", "final", "ffw", 1.0, 63.0, 2.0, 55.0, 3.0, 30.0, 2.0),
        ("bm", "0.99", "final", "ffw_structured", 1.0, 41.0, 1.0, 52.0, 2.5, 35.0, 3.0),
        ("bm", "0.99", "final", "ffw", 2.0, 70.0, 3.0, 50.0, 1.0, 20.0, 1.0),  # another gamma
        ("bm", "0.99", "epoch5", "ffw", 1.0, 60.0, 1.0, 45.0, 1.0, 25.0, 1.0),  # another start
        ("bm", "0.9", "final", "magnitude", NAN, 50.0, 0.0, 60.0, 1.0, 50.0, 1.0),  # another level
        ("cm", "0.99", "final", "ffw", 1.0, 20.0, 1.0, 10.0, 1.0, 10.0, 1.0),  # another dataset
    ],
    columns=[
        "dataset",
        "level",
        "start",
        "method",
        "gamma",
        "sparsity_mean",
        "sparsity_std",
        "task_accuracy_mean",
        "task_accuracy_std",
        "bias_accuracy_mean",
        "bias_accuracy_std",
    ],
)


def test_magnitude_vs_ffw_is_the_summary():
    fig = build_magnitude_vs_ffw_figure(SUMMARY, "bm", "0.99", 1.0)
    axes = fig.axes
    assert [ax.get_ylabel() for ax in axes] == [
        "task accuracy (unbiased test) (%)",
        "bias accuracy (fresh head) (%)",
    ]
    labels = ["magnitude pruning (no retraining)", "ffw (gamma 1)", "ffw_structured (gamma 1)"]
    assert texts(axes[0].get_legend().get_texts()) == labels
    assert axes[1].get_legend() is None
    # drawn: vanilla (0 %) and magnitude (50 %, 80 %) as one line, FFW's points at gamma 1; no other line
    drawn_rows = [SUMMARY.iloc[[1, 2, 0]], SUMMARY.iloc[[3]], SUMMARY.iloc[[4]]]
    for ax, metric in zip(axes, ["task_accuracy", "bias_accuracy"], strict=True):
        containers = errorbars(ax)
        assert [c.get_label() for c in containers] == labels
        assert len(ax.containers) == 3 and len(ax.collections) == 5  # 1 + 2 + 2 error-bar sets
        for container, rows in zip(containers, drawn_rows, strict=True):
            xs = rows["sparsity_mean"].to_numpy(float)
            mean = rows[f"{metric}_mean"].to_numpy(float)
            std = rows[f"{metric}_std"].to_numpy(float)
            close(container.lines[0].get_xdata(), xs)
            close(container.lines[0].get_ydata(), mean)
            expected = vertical(xs, mean - std, mean + std)
            if container.has_xerr:
                x_std = rows["sparsity_std"].to_numpy(float)
                expected = np.concatenate([horizontal(mean, xs - x_std, xs + x_std), expected])
            assert container.has_xerr == (container is not containers[0])
            close(error_segments(container), expected)
        drawn = [c.lines[0] for c in containers]
        assert [line.get_linestyle() for line in drawn] == ["-", "None", "None"]
        assert len(ax.lines) == len(drawn) + 2 + 4 + 4  # and the caps: 2 per error direction of each set


LAYERS = pd.DataFrame.from_records(
    [
        ("bm", "0.99", "ffw", "conv1", 10.0, 1.0),
        ("bm", "0.99", "ffw", "conv2", 50.0, 2.0),
        ("bm", "0.99", "ffw", "fc", 90.0, NAN),  # one seed: no error bar
        ("bm", "0.99", "ffw_structured", "fc", 80.0, 2.5),
        ("bm", "0.99", "ffw_structured", "conv1", 5.0, 0.5),  # no conv2: no bar
    ],
    columns=["dataset", "level", "method", "layer", "mean", "std"],
)


def test_layer_sparsity_bars_are_the_table():
    fig = build_layer_sparsity_figure(LAYERS)
    (ax,) = fig.axes
    order = ["conv1", "conv2", "fc"]
    assert texts(ax.get_xticklabels()) == order
    containers = bars(ax)
    assert [c.get_label() for c in containers] == ["ffw", "ffw_structured"]
    assert texts(ax.get_legend().get_texts()) == ["ffw", "ffw_structured"]
    assert len(ax.patches) == 2 * len(order) and len(ax.containers) == 4  # bars + their error bars
    assert len(ax.collections) == 2 and len(ax.lines) == 4  # the error bars and their caps, nothing else
    for i, container in enumerate(containers):
        part = LAYERS[LAYERS.method == container.get_label()].set_index("layer")
        mean = np.array([part["mean"].get(layer, NAN) for layer in order])
        std = np.array([part["std"].get(layer, NAN) for layer in order])
        xs = np.arange(len(order)) + i * 0.4
        np.testing.assert_allclose(centres(container), xs, rtol=0, atol=1e-12)
        close(heights(container), mean)
        has_err = ~np.isnan(mean) & ~np.isnan(std)
        close(
            error_segments(container.errorbar),
            vertical(xs[has_err], (mean - std)[has_err], (mean + std)[has_err]),
        )
    # a tick at the centre of each layer's group of bars
    np.testing.assert_allclose(ax.get_xticks(), np.arange(len(order)) + 0.2, rtol=0, atol=1e-12)
    assert ax.get_title() == "Paper D figure 4 analogue: where FFW prunes (bm at 0.99)"


def test_samples_figure_shows_each_grid_unchanged():
    rng = np.random.default_rng(0)
    grids = [
        (f"set {k}: biased train | unbiased test", rng.integers(0, 256, (6, 20, 3), dtype=np.uint8))
        for k in range(3)
    ]
    fig = build_samples_figure(grids)
    assert len(fig.axes) == len(grids)
    for ax, (title, grid) in zip(fig.axes, grids, strict=True):
        (image,) = ax.images
        assert not (ax.lines or ax.collections or ax.patches)
        np.testing.assert_array_equal(image.get_array(), grid)
        assert image.get_array().dtype == np.uint8
        assert ax.get_title(loc="left") == title
        assert not ax.axison
