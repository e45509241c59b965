"""The cross-paper matrix: cell records (round trip, bad input), the selection rule, the effects against the
baseline with their words, the grid, the figure and the report step — on hand-made records with hand-computed
numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from maskbench.matrix.cells import COLUMNS, Cell, CellError, read_cells, write_cells
from maskbench.matrix.table import (
    NO_ID_DEV,
    NO_KNOB,
    NONE_WITHIN,
    PICKED,
    cell_text,
    markdown,
    matrix_table,
    reading,
)

NAN = math.nan


def cell(method, seed, *, value=NAN, knob="", id_=80.0, ood=50.0, bias=NAN, id_dev=80.0, benchmark="b1",
         paper="D", native=False, density=0.5, seconds=10.0, bias_ideal=0.0):
    return Cell(benchmark, method, "-" if method == "baseline" else paper, native, knob, value, seed, id_, ood, bias,
                id_dev, "ID acc (%)", "OOD acc (%)", "bias head acc (%)" if not math.isnan(bias) else "",
                bias_ideal, 1.0 if method == "baseline" else density, 0.0 if method == "baseline" else seconds,
                "real, 10 examples", "tiny")


def records():
    out = [cell("baseline", s, ood=o, id_dev=d, bias=b) for s, o, d, b in
           ((1, 50, 80, 0.8), (2, 52, 81, 0.8), (3, 48, 79, 0.8))]
    # gamma 1: id_dev 80 (within 1 of 80), gamma 10: 79.5 (within), gamma 100: 70 (not)
    for gamma, dev, oods in ((1, 80, (51, 52, 53)), (10, 79.5, (60, 61, 59)), (100, 70, (70, 70, 70))):
        out += [cell("ffw", s, knob="gamma", value=gamma, id_dev=dev, ood=o, bias=0.2) for s, o in zip((1, 2, 3), oods, strict=True)]
    out += [cell("imp", s, paper="C", ood=50 + s, id_dev=60) for s in (1, 2)]
    out += [cell("movement_poe", s, paper="A", knob="strength", value=v, id_dev=60 - v, ood=55)
            for s in (1, 2, 3) for v in (0.5, 1.0)]
    return out


def test_round_trip_is_exact(tmp_path):
    path = tmp_path / "cells" / "x.csv"
    frame = write_cells(records(), path)
    back = read_cells([path])
    assert list(back.columns) == COLUMNS
    pd.testing.assert_frame_equal(back, frame[COLUMNS])
    assert [p.name for p in tmp_path.joinpath("cells").iterdir()] == ["x.csv"]  # no temporary left


def test_bad_records_name_the_field():
    with pytest.raises(CellError, match="method_paper"):
        cell("ffw", 1, paper="E")
    with pytest.raises(CellError, match="a knob needs a value"):
        cell("ffw", 1, knob="gamma")
    with pytest.raises(CellError, match="density"):
        cell("ffw", 1, density=1.5)


def test_bad_file_names_file_and_row(tmp_path):
    path = tmp_path / "x.csv"
    write_cells(records(), path)
    frame = pd.read_csv(path)
    frame.loc[3, "method_paper"] = "Z"
    frame.to_csv(path, index=False)
    with pytest.raises(CellError, match=r"x\.csv: row 5: .*'Z'"):
        read_cells([path])
    frame.drop(columns=["density"]).to_csv(path, index=False)
    with pytest.raises(CellError, match=r"x\.csv: matrix cells lack column\(s\) \['density'\]"):
        read_cells([path])


def test_a_record_in_two_files_is_refused(tmp_path):
    write_cells(records()[:3], tmp_path / "a.csv")
    write_cells(records()[:1], tmp_path / "b.csv")
    with pytest.raises(CellError, match="more than once"):
        read_cells([tmp_path / "a.csv", tmp_path / "b.csv"])


def table():
    return matrix_table(pd.DataFrame([c.__dict__ for c in records()]), delta=1.0)


def row(t, method):
    return t[t.method == method].iloc[0]


def test_selection_rule_picks_the_strongest_value_within_delta():
    t = table()
    ffw = row(t, "ffw")
    assert (ffw.value, ffw.selection, ffw.knob_values) == (10.0, PICKED, "1 10 100")
    assert ffw.ood_mean == pytest.approx(60.0) and ffw.ood_sd == pytest.approx(1.0)
    assert row(t, "imp").selection == NO_KNOB
    # strength 0.5 -> id_dev 59.5, 1.0 -> 59: both more than 1 point under 80: the weakest value
    poe = row(t, "movement_poe")
    assert (poe.value, poe.selection) == (0.5, NONE_WITHIN)
    # the grid says so beside the value; a value picked as the rule asks carries no note
    assert "strength 0.5 (the weakest: no value within delta)" in cell_text(poe)
    assert "gamma 10 (3 seeds)" in cell_text(ffw) and "the weakest" not in cell_text(ffw)
    assert list(t.method[t.benchmark == "b1"])[0] == "baseline"


def test_effects_against_the_baseline_and_their_words():
    t = table()
    ffw = row(t, "ffw")
    # OOD 60 ± 1 against 50 ± 2 over 3 seeds each: effect 10, SE sqrt(1/3 + 4/3)
    se = math.sqrt(1 / 3 + 4 / 3)
    assert ffw.ood_effect == pytest.approx(10.0) and ffw.ood_effect_se == pytest.approx(se)
    assert ffw.ood_verdict == f"debiases (+10.00 ± {se:.2f} SE, 3 seeds)"
    # bias 0.2 against 0.8, ideal 0: 0.6 closer; both constant: SE 0, beyond noise
    assert ffw.bias_effect == pytest.approx(0.6) and ffw.bias_word == "less bias"
    imp = row(t, "imp")  # 2 seeds: OOD 51, 52 against 50 ± 2: no claim
    assert imp.ood_effect == pytest.approx(1.5) and imp.ood_word == "within noise"
    assert row(t, "baseline").ood_verdict == "no data"


def test_the_reading_names_the_largest_gain_that_debiases_and_its_ties():
    # ffw: OOD +10 ± sqrt(1/3 + 4/3) = 1.29; movement_poe: 55 against 50 ± 2, +5 ± sqrt(4/3) = 1.15; their
    # difference 5 > 2 x hypot(1.29, 1.15) = 3.46: not tied; imp has 2 seeds (within noise): not named
    assert reading(table()) == [("b1", "largest gain that debiases: ffw (D), OOD +10.00 ± 1.29 SE (debiases), ID "
                                       "+0.0 points against the baseline; debiases too, short of it by more than "
                                       "the spread: movement_poe (A).")]
    # movement_poe at 58: +8 ± 1.15, 2 apart from ffw's +10: tied; its pick the weakest value (none within delta)
    tied = [c if c.method != "movement_poe" else cell("movement_poe", c.seed, paper="A", knob="strength",
                                                         value=c.value, id_dev=c.id_dev, ood=58) for c in records()]
    t = matrix_table(pd.DataFrame([c.__dict__ for c in tied]), 1.0)
    assert reading(t)[0][1].endswith("; tied with it: movement_poe (A).")
    # every OOD score at the baseline's: nothing beyond noise, and imp's two seeds make no claim
    flat = [c for c in records() if c.method in ("baseline", "imp")]
    t = matrix_table(pd.DataFrame([c.__dict__ for c in flat]), 1.0)
    assert reading(t) == [("b1", "no method debiases (an OOD gain beyond noise over 3 or more seeds at an ID cost "
                                 "within 5 points).")]


def test_the_reading_names_every_method_beyond_noise_that_does_not_debias():
    # baseline OOD 50, 52, 48 (sd 2) at ID 80. ffw: +10 ± 1.29 at ID 70, a cost of 10 > 5 points: trades ID for
    # OOD; imp: 40, 41, 39, -10 ± 1.29: hurts; movement_poe: 60, 61 on two seeds, +10.5 ± sqrt(0.5/2 + 4/3): moves
    cells = [c for c in records() if c.method == "baseline"]
    cells += [cell("ffw", s, ood=o, id_=70.0) for s, o in ((1, 60), (2, 61), (3, 59))]
    cells += [cell("imp", s, paper="C", ood=o) for s, o in ((1, 40), (2, 41), (3, 39))]
    cells += [cell("movement_poe", s, paper="A", ood=o) for s, o in ((1, 60), (2, 61))]
    t = matrix_table(pd.DataFrame([c.__dict__ for c in cells]), 1.0)
    assert reading(t) == [("b1", "no method debiases (an OOD gain beyond noise over 3 or more seeds at an ID cost "
                                 "within 5 points); trades ID for OOD: ffw (D); hurts: imp (C); moves with fewer than "
                                 "3 seeds (no claim): movement_poe (A).")]


def test_no_id_dev_score_picks_the_strongest_and_says_so():
    cells = [cell("baseline", 1, id_dev=NAN, benchmark="g"),
             *(cell("ffw", 1, knob="gamma", value=v, id_dev=NAN, benchmark="g") for v in (1, 5))]
    t = matrix_table(pd.DataFrame([c.__dict__ for c in cells]), 1.0)
    assert (row(t, "ffw").value, row(t, "ffw").selection) == (5.0, NO_ID_DEV)
    assert "gamma 5 (the strongest: no ID dev score)" in cell_text(row(t, "ffw"))


def test_markdown_grid_marks_native_cells_and_missing_pairs():
    cells = records() + [cell("baseline", 1, benchmark="b2"), cell("ffw", 1, benchmark="b2", native=True,
                                                                    knob="gamma", value=10, ood=51)]
    text = markdown(matrix_table(pd.DataFrame([c.__dict__ for c in cells]), 1.0))
    lines = text.splitlines()
    assert lines[0] == "| method | b1 | b2 |"
    imp_line = next(line for line in lines if line.startswith("| imp (C) |"))
    assert imp_line.endswith("| not run |")
    ffw_line = next(line for line in lines if line.startswith("| ffw (D) |"))
    assert ffw_line.split(" | ")[2].startswith("★ OOD 51.0; ID 80.0;")
    assert "OOD 60.0 ± 1.0; ID 80.0 ± 0.0; bias 0.20 ± 0.00; 50 % kept; 10 s; gamma 10 (3 seeds)" in ffw_line
    assert "Pairs that do not fit:" in text


def test_figure_titles_fit_and_every_marker_is_named():
    from figure_checks import outside_canvas, unnamed_marker_styles

    from maskbench.matrix.figure import matrix_figure
    cells = records() + [cell("baseline", 1, benchmark="gender", ood=NAN, bias=0.5, id_dev=NAN),
                         cell("ffw", 1, benchmark="gender", ood=NAN, bias=0.1, knob="gamma", value=1, native=True)]
    fig = matrix_figure(matrix_table(pd.DataFrame([c.__dict__ for c in cells]), 1.0),
                        "Methods x benchmarks: the selection rule's pick (delta 1)")
    assert outside_canvas(fig) == []
    assert unnamed_marker_styles(fig) == set()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[0] == "baseline (unpruned)" and "ffw (D), its own paper's benchmark" in legend


def test_report_step_writes_table_grid_and_figure(tmp_path):
    from maskbench.steps.matrix.report import main
    write_cells(records(), tmp_path / "cells.csv")
    out = {k: tmp_path / "out" / f"matrix.{k}" for k in ("csv", "md", "png")}
    assert main(["--cells", str(tmp_path / "cells.csv"), "--delta", "1", "--table", str(out["csv"]),
                 "--markdown", str(out["md"]), "--figure", str(out["png"])]) == 0
    written = pd.read_csv(out["csv"])
    assert list(written.method) == ["baseline", "ffw", "imp", "movement_poe"]
    assert out["md"].read_text().startswith("**The cross-paper matrix**: 4 methods (baseline included) on 1 "
                                            "benchmarks;")
    assert out["png"].read_bytes()[:4] == b"\x89PNG"


def test_the_smoke_dag_writes_the_tiny_matrix(smoke_run):
    """Every track's cells reach the table: each benchmark with its baseline, the papers' own cells marked, every
    record's pick taken by the rule, the figure drawn."""
    results = smoke_run / "results/smoke"
    table = pd.read_csv(results / "tables" / "matrix.csv", keep_default_na=False, na_values=[""])
    benchmarks = set(table.benchmark)
    assert benchmarks == {"mnli_hans", "mnli_negation", "gender_seat", "gender_crows", "biased_mnist_0.99",
                          "multi_color_mnist"}
    for benchmark, rows in table.groupby("benchmark"):
        assert "baseline" in set(rows.method), benchmark
    native = {(r.benchmark, r.method_paper) for r in table.itertuples() if r.native}
    assert {("mnli_hans", "A"), ("mnli_hans", "C"), ("gender_seat", "B"), ("biased_mnist_0.99", "D")} <= native
    assert not any(r.native for r in table.itertuples() if (r.benchmark, r.method_paper) in
                   {("mnli_hans", "D"), ("gender_seat", "D"), ("biased_mnist_0.99", "A"), ("biased_mnist_0.99", "C")})
    assert set(table.selection) <= {PICKED, NONE_WITHIN, NO_ID_DEV, NO_KNOB}
    cells = read_cells(sorted((results / "matrix" / "cells").glob("*.csv")))
    assert set(cells.benchmark) == benchmarks and cells.density.between(0, 1).all()
    assert (results / "tables" / "matrix.md").read_text().count("\n| ") >= 8
    assert (results / "figures" / "matrix.png").read_bytes()[:4] == b"\x89PNG"
