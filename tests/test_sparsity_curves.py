import math

import numpy as np
import pandas as pd
import pytest

from maskbench.tracks.nlu.report.sparsity_curves import (
    CURVE_COLUMNS,
    TABLE5_COLUMNS,
    curve_table,
    load_paper_table5,
    plot_sparsity_curves,
    plot_timing_curves,
    table5,
    table5_markdown,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def rec(seed, value, sparsity=0.5, method="mask_train", eval_set="hans", task="mnli", loss="poe", **extra):
    return {
        "paradigm": "ft",
        "method": method,
        "loss": loss,
        "task": task,
        "eval_set": eval_set,
        "metric": "accuracy",
        "sparsity": sparsity,
        "seed": seed,
        "value": value,
        **extra,
    }


def test_curve_table_mean_std_and_columns():
    records = [
        rec(1, 60.0),
        rec(2, 62.0),
        rec(3, 67.0),  # mean 63, deviations -3 -1 4: var = 26/2 = 13
        rec(1, 50.0, sparsity=0.9),
        rec(2, 54.0, sparsity=0.9),  # mean 52, var = 8/1 = 8
        rec(1, 80.0, sparsity=0.2),  # one seed: std 0
        rec(1, 70.0, method="imp"),
    ]
    table = curve_table(records)
    assert list(table.columns[:9]) == CURVE_COLUMNS
    assert list(table.columns) == CURVE_COLUMNS + ["metric"]
    # sorted by method (imp < mask_train), then sparsity
    assert list(table["method"]) == ["imp", "mask_train", "mask_train", "mask_train"]
    assert list(table["sparsity"]) == [0.5, 0.2, 0.5, 0.9]
    mt = table[table["method"] == "mask_train"].set_index("sparsity")
    assert mt.loc[0.5, "mean"] == pytest.approx(63.0)
    assert mt.loc[0.5, "std"] == pytest.approx(math.sqrt(13.0))
    assert mt.loc[0.5, "n_seeds"] == 3
    assert mt.loc[0.9, "mean"] == pytest.approx(52.0)
    assert mt.loc[0.9, "std"] == pytest.approx(math.sqrt(8.0))
    assert mt.loc[0.2, "std"] == 0.0
    assert mt.loc[0.2, "n_seeds"] == 1
    assert (table["metric"] == "accuracy").all()


def test_curve_table_start_step_column():
    records = [
        {**rec(s, v), "start_step": step} for s, v, step in [(1, 40.0, 0), (2, 44.0, 0), (1, 70.0, 20000)]
    ]
    for r in records:
        del r["sparsity"]
    table = curve_table(records, x="start_step")
    assert list(table.columns) == [
        "paradigm",
        "method",
        "loss",
        "task",
        "eval_set",
        "start_step",
        "mean",
        "std",
        "n_seeds",
        "metric",
    ]
    assert list(table["start_step"]) == [0.0, 20000.0]
    assert list(table["mean"]) == pytest.approx([42.0, 70.0])
    assert table["std"].iloc[0] == pytest.approx(math.sqrt(8.0))


def test_curve_table_refuses_duplicate_seed():
    with pytest.raises(ValueError, match=r"duplicate seed 2.*record 2.*record 1"):
        curve_table([rec(1, 60.0), rec(2, 61.0), rec(2, 62.0)])
    # the same seed at another sparsity or for another eval set is not a duplicate
    assert len(curve_table([rec(1, 60.0), rec(1, 61.0, sparsity=0.7), rec(1, 62.0, eval_set="val")])) == 3


@pytest.mark.parametrize("bad", [math.nan, math.inf, "61", None])
def test_curve_table_refuses_non_finite(bad):
    with pytest.raises(ValueError, match="record 1"):
        curve_table([rec(1, 60.0), rec(2, bad)])


def test_curve_table_refuses_missing_field():
    broken = rec(1, 60.0)
    del broken["loss"]
    with pytest.raises(ValueError, match="record 0.*lacks loss"):
        curve_table([broken])


def _grid_records():
    records = []
    for task, eval_sets in {
        "mnli": ["validation_matched", "hans"],
        "qqp": ["validation", "paws_qqp"],
    }.items():
        for eval_set in eval_sets:
            for method in ("mask_train", "imp"):
                for k, sparsity in enumerate((0.2, 0.5, 0.7, 0.9)):
                    for seed in (1, 2):
                        records.append(
                            rec(
                                seed,
                                80.0 - (5 if method == "imp" else 3) * k + seed,
                                sparsity,
                                method,
                                eval_set,
                                task,
                            )
                        )
    return records


def _is_png(path):
    data = path.read_bytes()
    return len(data) > 1000 and data.startswith(PNG_MAGIC)


def test_plot_sparsity_curves_one_panel(tmp_path):
    table = curve_table([r for r in _grid_records() if r["eval_set"] == "hans"])
    out = tmp_path / "new" / "one.png"
    plot_sparsity_curves(table, out)
    assert _is_png(out)
    # the PNG and its SVG, no temporary file left behind
    assert sorted(p.name for p in out.parent.iterdir()) == ["one.png", "one.svg"]


def test_plot_sparsity_curves_four_panels_with_reference(tmp_path):
    table = curve_table(_grid_records())
    reference = pd.DataFrame(
        {
            "task": ["mnli", "mnli", "qqp"],
            "eval_set": ["validation_matched", "hans", "paws_qqp"],
            "mean": [84.0, 61.0, 40.0],
            "std": [0.3, 1.5, 2.0],
        }
    )
    plain, ref = tmp_path / "plain.png", tmp_path / "ref.png"
    plot_sparsity_curves(table, plain)
    plot_sparsity_curves(table, ref, reference=reference)
    assert _is_png(plain) and _is_png(ref)
    assert plain.read_bytes() != ref.read_bytes()


def test_plot_panels_select_and_order(tmp_path):
    table = curve_table(_grid_records())
    out = tmp_path / "two.png"
    plot_sparsity_curves(table, out, panels=[("mnli", "validation_matched"), ("mnli", "hans")])
    assert _is_png(out)
    with pytest.raises(ValueError, match=r"panels not in the curve table: \(mnli, negation\)"):
        plot_sparsity_curves(table, tmp_path / "bad.png", panels=[("mnli", "negation")])
    assert not (tmp_path / "bad.png").exists()


def test_plot_timing_curves(tmp_path):
    records = []
    for r in _grid_records():
        if r["sparsity"] == 0.2:
            continue
        r = dict(r)
        r["start_step"] = {0.5: 0, 0.7: 10000, 0.9: 20000}[r.pop("sparsity")]
        records.append(r)
    table = curve_table(records, x="start_step")
    out = tmp_path / "timing.png"
    plot_timing_curves(table, out)
    assert _is_png(out)
    with pytest.raises(ValueError, match="start_step"):
        plot_timing_curves(curve_table(_grid_records()), tmp_path / "wrong.png")


def test_plot_refuses_empty_table(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        plot_sparsity_curves(curve_table([]), tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()


COLUMN_MAP = {
    "mnli": ("mnli", "validation_matched"),
    "hans": ("mnli", "hans"),
    "symm2": ("fever", "symmetric_v2"),
}


def t5(schedule, init, task, eval_set, seed, value):
    return {
        "schedule": schedule,
        "init": init,
        "task": task,
        "eval_set": eval_set,
        "metric": "accuracy",
        "seed": seed,
        "value": value,
    }


def test_paper_table5_is_shipped():
    paper = load_paper_table5()
    assert list(paper.columns) == [
        "schedule",
        "init",
        "mnli",
        "hans",
        "qqp",
        "paws_qqp",
        "paws_wiki",
        "fever",
        "symm1",
        "symm2",
    ]
    assert len(paper) == 5


def test_table5_paper_values():
    records = [
        t5("fixed_0.9", "hard", "mnli", "validation_matched", 1, 70.0),
        t5("fixed_0.9", "hard", "mnli", "validation_matched", 2, 72.0),  # 71 ± sqrt(2)
        t5("fixed_0.9", "hard", "mnli", "hans", 1, 51.0),
        t5("gradual_0.7-0.9", "soft", "fever", "symmetric_v2", 1, 57.0),
        t5("gradual_0.7-0.9", "soft", "fever", "symmetric_v2", 2, 59.0),
        t5("gradual_0.7-0.9", "soft", "fever", "symmetric_v2", 3, 61.0),  # 59 ± 2
        t5("gradual_0.6-0.9", "soft", "mnli", "validation_matched", 1, 75.0),  # not in the paper
        t5("fixed_0.9", "hard", "mnli", "negation", 1, 40.0),  # no paper column
    ]
    df = table5(records, COLUMN_MAP)
    assert list(df.columns[:8]) == TABLE5_COLUMNS
    cell = df.set_index(["schedule", "init", "task", "eval_set"])
    hard = cell.loc[("fixed_0.9", "hard", "mnli", "validation_matched")]
    assert hard["paper"] == pytest.approx(72.09)
    assert hard["mean"] == pytest.approx(71.0)
    assert hard["std"] == pytest.approx(math.sqrt(2.0))
    assert hard["n_seeds"] == 2
    assert cell.loc[("fixed_0.9", "hard", "mnli", "hans"), "paper"] == pytest.approx(52.56)
    soft = cell.loc[("gradual_0.7-0.9", "soft", "fever", "symmetric_v2")]
    assert soft["paper"] == pytest.approx(58.17)
    assert soft["mean"] == pytest.approx(59.0)
    assert soft["std"] == pytest.approx(2.0)
    assert math.isnan(cell.loc[("gradual_0.6-0.9", "soft", "mnli", "validation_matched"), "paper"])
    assert math.isnan(cell.loc[("fixed_0.9", "hard", "mnli", "negation"), "paper"])
    assert pd.isna(cell.loc[("fixed_0.9", "hard", "mnli", "negation"), "column"])
    # schedule/init sorted, then column_map order, unmapped eval sets last
    assert list(zip(df["schedule"], df["eval_set"], strict=True)) == [
        ("fixed_0.9", "validation_matched"),
        ("fixed_0.9", "hans"),
        ("fixed_0.9", "negation"),
        ("gradual_0.6-0.9", "validation_matched"),
        ("gradual_0.7-0.9", "symmetric_v2"),
    ]

    md = table5_markdown(df)
    lines = md.strip().splitlines()
    assert lines[0] == (
        "| Schedule | Init | MNLI · validation_matched | MNLI · hans | MNLI · negation "
        "| FEVER · symmetric_v2 |"
    )
    assert len(lines) == 2 + 3  # header, rule, one row per (schedule, init)
    assert "| fixed_0.9 | hard | 71.00 ± 1.41 (72.09) | 51.00 ± – (52.56) | 40.00 ± – (–) | – |" in md
    assert "| gradual_0.6-0.9 | soft | 75.00 ± – (–) | – | – | – |" in md
    assert "| gradual_0.7-0.9 | soft | – | – | – | 59.00 ± 2.00 (58.17) |" in md
    # synthetic FEVER beside real MNLI: its column says so (report.captions.data_label)
    assert table5_markdown(df, {"mnli": {"real"}, "fever": {"synthetic"}}).splitlines()[0] == (
        "| Schedule | Init | MNLI · validation_matched | MNLI · hans | MNLI · negation "
        "| synthetic FEVER · symmetric_v2 |"
    )


def test_table5_column_map_checks():
    with pytest.raises(ValueError, match="unknown paper column 'mnli_val'"):
        table5([], {"mnli_val": ("mnli", "validation_matched")})
    with pytest.raises(ValueError, match="both map to"):
        table5([], {"mnli": ("mnli", "hans"), "hans": ("mnli", "hans")})
    with pytest.raises(ValueError, match="duplicate seed"):
        table5([t5("fixed_0.9", "hard", "mnli", "hans", 1, 50.0)] * 2, COLUMN_MAP)
    empty = table5([], COLUMN_MAP)
    assert empty.empty and list(empty.columns[:8]) == TABLE5_COLUMNS


def test_table5_metric_specific_column():
    records = [
        {**t5("fixed_0.9", "soft", "qqp", "validation", 1, 80.0), "metric": "accuracy"},
        {**t5("fixed_0.9", "soft", "qqp", "validation", 1, 70.0), "metric": "f1"},
    ]
    df = table5(records, {"qqp": {"task": "qqp", "eval_set": "validation", "metric": "accuracy"}})
    by_metric = df.set_index("metric")
    assert by_metric.loc["accuracy", "paper"] == pytest.approx(77.08)
    assert np.isnan(by_metric.loc["f1", "paper"])
    assert "QQP · validation [accuracy]" in table5_markdown(df)
