"""Paper B's tables and figure 3 from hand-made run files: the task-accuracy and CrowS-Pairs cells are mean ± std
over seeds of the per-run values, the original row reads its own files, and figure 3's points are the same means."""

import math

import pandas as pd
import pytest

from maskbench.tracks.gender.report.figures import performance_bias_frame
from maskbench.tracks.gender.report.tables import kind_table, original_extras, original_frame, runs_frame


def run(seed):
    return {"kind": "frozen", "granularity": "head", "layers": "all", "mode": "token", "seed": seed}


def summary():
    return {"curve": [{"loss_debias": 2.0, "loss_regularize": 0.5}], "steps": 4, "density": 0.5,
            "heads_pruned": [[1, 0], [0, 0]], "heads_pruned_nn_pruning": [[1, 1], [0, 0]]}


def seat(effect):
    return {"seat": [{"test": "t6", "effect_size": effect, "p_value": 0.1, "p_exact": True},
                     {"test": "t8", "effect_size": -effect, "p_value": 0.2, "p_exact": True}]}


def test_task_and_crows_cells_are_mean_and_std_over_seeds():
    runs = [run(1), run(2)]
    tasks = [{"nli": {"dev_accuracy": 80.0}}, {"nli": {"dev_accuracy": 90.0}}]
    lm = [{"crows_pairs": {"score": 40.0}}, {"crows_pairs": {"score": 60.0}}]
    frame, long = runs_frame(runs, [summary(), summary()], [seat(0.2), seat(0.4)], tasks, lm)
    assert list(frame["performance"]) == [80.0, 90.0] and list(frame["crows_pairs"]) == [40.0, 60.0]
    assert list(frame["seat_mean_abs"]) == pytest.approx([0.2, 0.4])   # mean |effect| over the two tests
    original_tasks = [{"nli": {"dev_accuracy": 70.0}}, {"nli": {"dev_accuracy": 72.0}}]
    cells = original_extras(original_tasks, {"crows_pairs": {"score": 55.0}})
    assert cells == {"task acc (ours)": f"71.00 ± {math.sqrt(2):.2f}", "CrowS-Pairs (ours)": "55.00"}
    table = kind_table("frozen", frame, long, original_frame(seat(1.0)), ["t6", "t8"], cells).set_index("granularity")
    assert table.loc["head", "task acc (ours)"] == f"85.00 ± {math.sqrt(50):.2f}"
    assert table.loc["head", "CrowS-Pairs (ours)"] == f"50.00 ± {math.sqrt(200):.2f}"
    assert table.loc["original", "task acc (ours)"] == cells["task acc (ours)"]
    assert table.loc["head", "heads pruned, V all zero (ours)"] == "1.00 ± 0.00"
    assert table.loc["head", "heads pruned, Q, K or V all zero (#P, ours)"] == "2.00 ± 0.00"
    assert table.loc["original", "heads pruned, Q, K or V all zero (#P, ours)"] == "0"
    # both seeds' masks keep 50 %: engaged; the original model has no mask
    assert table.loc["head", "engagement"] == "engaged" and table.loc["original", "engagement"] == "—"
    points = performance_bias_frame(frame, {"performance": [70.0, 72.0], "seat_mean_abs": 1.0, "crows_pairs": 55.0})
    assert points.iloc[0].to_dict()["performance"] == 71.0 and points.iloc[0]["performance_std"] == pytest.approx(
        math.sqrt(2))
    row = points.iloc[1]
    assert (row["kind"], row["performance"], row["crows_pairs"]) == ("frozen", 85.0, 50.0)
    assert row["crows_pairs_std"] == pytest.approx(math.sqrt(200)) and isinstance(points, pd.DataFrame)


def test_without_task_or_lm_files_the_tables_keep_their_columns():
    frame, long = runs_frame([run(1)], [summary()], [seat(0.3)])
    assert "performance" not in frame.columns and "crows_pairs" not in frame.columns
    table = kind_table("frozen", frame, long, original_frame(seat(1.0)), ["t6", "t8"])
    assert not any("task acc" in c or "CrowS" in c for c in table.columns)



def test_glue_metrics_name_the_task_column_and_feed_it():
    """Tasks scored by GLUE's metrics (CoLA Matthews, MRPC mean of F1 and accuracy): runs.csv holds each task's
    score, the mean is the performance, and the column is headed "task score" (not "task acc")."""
    tasks = [{"cola": {"metric": "matthews", "dev_accuracy": 80.0, "dev_score": 40.0},
              "mrpc": {"metric": "f1_accuracy", "dev_accuracy": 70.0, "dev_score": 75.0}}]
    frame, long = runs_frame([run(1)], [summary()], [seat(0.3)], tasks)
    assert frame.loc[0, "task_cola"] == 40.0 and frame.loc[0, "performance"] == 57.5
    assert frame.loc[0, "performance_metrics"] == "cola:matthews,mrpc:f1_accuracy"
    cells = original_extras(tasks, None)
    table = kind_table("frozen", frame, long, original_frame(seat(1.0)), ["t6", "t8"], cells).set_index("granularity")
    assert table.loc["head", "task score (ours)"] == "57.50" and table.loc["original", "task score (ours)"] == "57.50"
    assert not any("task acc" in c for c in table.columns)


def test_an_objective_row_is_a_table4_row_of_its_own_without_paper_b_numbers():
    """A gender.runs.objectives row (the kaneko variant with context-debias's batching) sits in Table 4 beside the
    grid's debias-only run at the same layers and mode, its SEAT cells its own seeds' mean, no paper B figure."""
    grid = [{"kind": "debias_only", "granularity": None, "layers": "all", "mode": "token", "seed": s} for s in (1, 2)]
    row = [{**r, "objective": "kaneko_cd"} for r in grid]
    debias = {"curve": [{"loss_debias": 1.0, "loss_regularize": 0.1}], "steps": 3}
    frame, long = runs_frame(grid + row, [debias] * 4, [seat(0.2), seat(0.4), seat(1.0), seat(3.0)])
    table = kind_table("debias_only", frame, long, original_frame(seat(1.0)), ["t6", "t8"]).set_index("objective")
    assert table.loc["the config's", "t6 (ours)"] == f"0.30 ± {math.sqrt(0.02):.2f}"
    assert table.loc["kaneko_cd", "t6 (ours)"] == f"2.00 ± {math.sqrt(2):.2f}"
    assert table.loc["kaneko_cd", "t8 (ours)"] == f"-2.00 ± {math.sqrt(2):.2f}"
    assert not pd.isna(table.loc["the config's", "paper seat6"])
    assert pd.isna(table.loc["kaneko_cd", "paper seat6"])
    points = performance_bias_frame(frame.assign(performance=[1.0, 2.0, 3.0, 4.0]), {"performance": [0.0]})
    assert list(points["objective"]) == ["", "", "kaneko_cd"] and list(points["performance"]) == [0.0, 1.5, 3.5]


def test_the_figures_titles_fit_their_canvas_and_every_marker_is_named():
    """Figures 2 and 3 on hand-made frames of the smallest canvas (one panel): the two-line suptitles lie inside
    the figure (one line was wider than a one-panel canvas), and every marker drawn (a dot per kind, the original's
    star) is named in the legend."""
    from figure_checks import outside_canvas, unnamed_marker_styles

    from maskbench.tracks.gender.report.figures import (
        build_heads_figure,
        build_performance_bias_figure,
        heads_frame,
    )

    runs = [{"kind": "frozen", "granularity": "head", "layers": "all", "mode": "token", "seed": s} for s in (1, 2)]
    summaries = [{"heads_pruned": [[1, 0], [0, 0]]}, {"heads_pruned": [[1, 1], [0, 0]]}]
    heads = build_heads_figure(heads_frame(runs, summaries))
    assert outside_canvas(heads) == [] and unnamed_marker_styles(heads) == set()
    assert heads._suptitle.get_text() == "Paper B figure 2 analogue:\nsurviving heads (head, frozen weights)"
    points = pd.DataFrame([
        {"kind": "original", "granularity": "", "layers": "", "mode": "", "performance": 80.0,
         "performance_std": 1.0, "seat_mean_abs": 0.5, "seat_mean_abs_std": 0.0},
        {"kind": "frozen", "granularity": "head", "layers": "all", "mode": "token", "performance": 78.0,
         "performance_std": 0.5, "seat_mean_abs": 0.3, "seat_mean_abs_std": 0.1}])
    performance = build_performance_bias_figure(points)
    assert outside_canvas(performance) == [] and unnamed_marker_styles(performance) == set()
    assert sorted(t.get_text() for t in performance.axes[0].get_legend().get_texts()) == ["frozen", "original"]


def test_a_pruning_row_that_keeps_everything_on_a_seed_reads_not_engaged():
    kept = {**summary(), "density": 0.9995}  # keeps 99.95 % (engaged below 99.9 %)
    frame, long = runs_frame([run(1), run(2)], [summary(), kept], [seat(0.2), seat(0.4)])
    table = kind_table("frozen", frame, long, original_frame(seat(1.0)), ["t6", "t8"]).set_index("granularity")
    assert table.loc["head", "engagement"] == "not engaged (1 of 2 seeds)"
