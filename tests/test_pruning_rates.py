import math

import numpy as np
import pandas as pd
import pytest

from maskbench.masking.selectors import ENCODER_KINDS
from maskbench.tracks.nlu.report.pruning_rates import (
    heatmap_matrix,
    jaccard_chance,
    layer_and_kind,
    plot_pruning_heatmaps,
    pruning_rate_table,
    pruning_rates,
    seed_overlap_summary,
    seed_overlap_table,
)

L0 = "bert.encoder.layer.0."
L1 = "bert.encoder.layer.1."


def m(shape, pruned):
    """A keep-mask of ``shape`` whose flat positions in ``pruned`` are False."""
    kept = np.ones(int(np.prod(shape)), dtype=bool)
    kept[list(pruned)] = False
    return kept.reshape(shape)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bert.encoder.layer.3.attention.self.query", (3, "query")),
        ("bert.encoder.layer.3.attention.self.key", (3, "key")),
        ("bert.encoder.layer.3.attention.self.value", (3, "value")),
        ("bert.encoder.layer.3.attention.output.dense", (3, "attention_output")),
        ("bert.encoder.layer.3.intermediate.dense", (3, "ffn_in")),
        ("bert.encoder.layer.3.output.dense", (3, "ffn_out")),
        ("bert.encoder.layer.11.output.dense", (11, "ffn_out")),
        ("encoder.layer.0.attention.output.dense", (0, "attention_output")),
        ("encoder.layer.0.output.dense", (0, "ffn_out")),
        ("encoder.layer.2.attention.self.key", (2, "key")),
        ("bert.encoder.layer.3.attention.self.query.weight", (3, "query")),
        ("bert.pooler.dense", (None, "pooler")),
        ("pooler.dense", (None, "pooler")),
        ("classifier", (None, "classifier")),
        ("bert.embeddings.word_embeddings", (None, "other")),
    ],
)
def test_layer_and_kind(name, expected):
    assert layer_and_kind(name) == expected


def mask_seed1():
    return {
        L1 + "intermediate.dense": m((1, 2), [0, 1]),  # 2 weights, 2 pruned: 100 %
        L0 + "output.dense": m((2, 4), [0, 1, 2, 3, 4, 5]),  # 8 weights, 6 pruned: 75 %
        L0 + "attention.self.query": m((2, 2), [1]),  # 4 weights, 1 pruned: 25 %
        L1 + "attention.output.dense": m((2, 2), []),  # 4 weights, none pruned
        "classifier": m((3,), [2]),  # not an encoder module: left out of the table
    }


def mask_seed2():
    return {
        L0 + "attention.self.query": m((2, 2), [0, 3]),  # 50 %
        L0 + "output.dense": m((2, 4), [6, 7]),  # 25 %
        L1 + "attention.output.dense": m((2, 2), [2]),  # 25 %
        L1 + "intermediate.dense": m((1, 2), [0, 1]),  # 100 %
        "classifier": m((3,), []),
    }


def test_pruning_rates_counts_and_order():
    rates = pruning_rates(mask_seed1())
    assert list(rates.columns) == ["layer", "kind", "module", "n_weights", "n_pruned", "pruned_fraction"]
    assert list(rates["kind"]) == ["query", "ffn_out", "attention_output", "ffn_in", "classifier"]
    assert rates["layer"].tolist()[:4] == [0, 0, 1, 1]
    assert pd.isna(rates["layer"].iloc[4])
    assert rates["n_weights"].tolist() == [4, 8, 4, 2, 3]
    assert rates["n_pruned"].tolist() == [1, 6, 0, 2, 1]
    assert rates["pruned_fraction"].tolist() == pytest.approx([25.0, 75.0, 0.0, 100.0, 100 / 3])


def test_pruning_rate_table_mean_std_overall():
    records = [
        {"task": "mnli", "row": "md_underparam", "seed": 2, "mask": mask_seed2()},
        {"task": "mnli", "row": "md_underparam", "seed": 1, "mask": mask_seed1()},
        {"task": "mnli", "row": "baseline", "seed": 1, "mask": mask_seed1()},
    ]
    table = pruning_rate_table(records)
    assert list(table.columns) == ["task", "row", "layer", "kind", "pruned_mean", "pruned_std", "n_seeds"]
    md = table[table["row"] == "md_underparam"].set_index(["layer", "kind"])
    assert list(md.index) == [
        (0, "query"),
        (0, "ffn_out"),
        (1, "attention_output"),
        (1, "ffn_in"),
        (-1, "overall"),
    ]
    assert md.loc[(0, "query"), "pruned_mean"] == pytest.approx(37.5)
    assert md.loc[(0, "query"), "pruned_std"] == pytest.approx(25 / math.sqrt(2))  # std of 25, 50
    assert md.loc[(0, "ffn_out"), "pruned_mean"] == pytest.approx(50.0)
    assert md.loc[(0, "ffn_out"), "pruned_std"] == pytest.approx(50 / math.sqrt(2))  # std of 75, 25
    assert md.loc[(1, "ffn_in"), "pruned_std"] == 0.0
    assert (md["n_seeds"] == 2).all()
    # overall over the 18 encoder weights (classifier excluded): 9/18 = 50 % and 7/18
    assert md.loc[(-1, "overall"), "pruned_mean"] == pytest.approx((50.0 + 700 / 18) / 2)
    assert md.loc[(-1, "overall"), "pruned_std"] == pytest.approx(abs(50.0 - 700 / 18) / math.sqrt(2))
    base = table[table["row"] == "baseline"].set_index(["layer", "kind"])
    assert base.loc[(0, "query"), "pruned_mean"] == pytest.approx(25.0)
    assert base.loc[(0, "query"), "pruned_std"] == 0.0  # one seed: 0, not NaN
    assert (base["n_seeds"] == 1).all()
    assert base.loc[(-1, "overall"), "pruned_mean"] == pytest.approx(50.0)
    # (task, row) order of first appearance
    assert list(dict.fromkeys(table["row"])) == ["md_underparam", "baseline"]


def test_pruning_rate_table_rejects_duplicate_seed():
    rec = {"task": "mnli", "row": "baseline", "seed": 1, "mask": mask_seed1()}
    with pytest.raises(ValueError, match="two masks"):
        pruning_rate_table([rec, dict(rec)])


def overlap_mask(pruned):
    """10 weights over two modules (4 + 6); flat positions 0-3 are in the first, 4-9 in the second."""
    return {
        L0 + "attention.self.key": m((4,), [p for p in pruned if p < 4]),
        L0 + "attention.self.value": m((2, 3), [p - 4 for p in pruned if p >= 4]),
    }


def test_jaccard_chance_values():
    # E|A∩B| = 3*3/10 = 0.9, so 0.9 / (3 + 3 - 0.9)
    assert jaccard_chance(3, 3, 10) == pytest.approx(0.9 / 5.1)
    assert jaccard_chance(10, 10, 10) == pytest.approx(1.0)
    assert jaccard_chance(0, 0, 10) == 1.0
    assert jaccard_chance(0, 4, 10) == 0.0


def test_seed_overlap_table_and_summary():
    only_a = m((5,), [0, 1, 2, 3, 4])  # a module absent from the other masks: must be ignored
    mask1 = {**overlap_mask([2, 3, 4]), "classifier": only_a}
    mask2 = overlap_mask([3, 4, 5])
    mask3 = overlap_mask([7, 8, 9])
    records = [
        {"task": "mnli", "row": "sd_underparam", "seed": 3, "mask": mask3},
        {"task": "mnli", "row": "sd_underparam", "seed": 1, "mask": mask1},
        {"task": "mnli", "row": "sd_underparam", "seed": 2, "mask": mask2},
        {"task": "mnli", "row": "empty", "seed": 1, "mask": overlap_mask([])},
        {"task": "mnli", "row": "empty", "seed": 2, "mask": overlap_mask([])},
        {"task": "mnli", "row": "single", "seed": 1, "mask": mask1},
    ]
    ov = seed_overlap_table(records)
    assert list(ov.columns)[:7] == [
        "task",
        "row",
        "seed_a",
        "seed_b",
        "n_pruned_a",
        "n_pruned_b",
        "jaccard_pruned",
    ]
    sd = ov[ov["row"] == "sd_underparam"]
    assert list(zip(sd["seed_a"], sd["seed_b"], strict=True)) == [(1, 2), (1, 3), (2, 3)]
    assert sd["n_pruned_a"].tolist() == [3, 3, 3]
    assert sd["n_pruned_b"].tolist() == [3, 3, 3]
    assert sd["n_weights"].tolist() == [10, 10, 10]
    # {2,3,4} vs {3,4,5}: 2 shared / 4 in the union; {2,3,4} vs {7,8,9} and {3,4,5} vs {7,8,9}: disjoint
    assert sd["jaccard_pruned"].tolist() == pytest.approx([0.5, 0.0, 0.0])
    assert sd["jaccard_chance"].tolist() == pytest.approx([0.9 / 5.1] * 3)
    empty = ov[ov["row"] == "empty"]
    assert empty["jaccard_pruned"].tolist() == [1.0]
    assert "single" not in set(ov["row"])

    summary = seed_overlap_summary(ov).set_index("row")
    assert summary.loc["sd_underparam", "n_pairs"] == 3
    assert summary.loc["sd_underparam", "jaccard_mean"] == pytest.approx(0.5 / 3)
    assert summary.loc["sd_underparam", "jaccard_std"] == pytest.approx(np.std([0.5, 0.0, 0.0], ddof=1))
    assert summary.loc["sd_underparam", "jaccard_min"] == 0.0
    assert summary.loc["sd_underparam", "jaccard_chance_mean"] == pytest.approx(0.9 / 5.1)
    assert summary.loc["empty", "n_pairs"] == 1
    assert summary.loc["empty", "jaccard_std"] == 0.0


def test_seed_overlap_rejects_shape_mismatch():
    records = [
        {"task": "t", "row": "r", "seed": 1, "mask": {"encoder.layer.0.output.dense": m((4,), [0])}},
        {"task": "t", "row": "r", "seed": 2, "mask": {"encoder.layer.0.output.dense": m((2, 3), [0])}},
    ]
    with pytest.raises(ValueError, match="shapes differ"):
        seed_overlap_table(records)


def full_mask(n_layers, rng, rate):
    mask = {}
    for layer in range(n_layers):
        for suffix in (
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
            "intermediate.dense",
            "output.dense",
        ):
            mask[f"bert.encoder.layer.{layer}.{suffix}"] = rng.random((8, 8)) >= rate
    return mask


def test_heatmap_matrix_layout():
    table = pruning_rate_table([{"task": "mnli", "row": "baseline", "seed": 1, "mask": mask_seed1()}])
    matrix, layers = heatmap_matrix(table, "mnli", "baseline")
    assert layers == [0, 1]
    assert matrix.shape == (len(ENCODER_KINDS), 2)
    assert matrix[ENCODER_KINDS.index("query"), 0] == pytest.approx(25.0)
    assert matrix[ENCODER_KINDS.index("ffn_out"), 0] == pytest.approx(75.0)
    assert matrix[ENCODER_KINDS.index("ffn_in"), 1] == pytest.approx(100.0)
    assert np.isnan(matrix[ENCODER_KINDS.index("key"), 0])


@pytest.mark.parametrize(
    "pairs", [[("mnli", "baseline")], [(t, r) for t in ("mnli", "qqp") for r in ("a", "b")]]
)
def test_plot_pruning_heatmaps_writes_png(tmp_path, pairs):
    rng = np.random.default_rng(0)
    records = [
        {"task": t, "row": r, "seed": s, "mask": full_mask(4, rng, 0.1 * (i + 1))}
        for i, (t, r) in enumerate(pairs)
        for s in (1, 2)
    ]
    out = tmp_path / "nested" / "dir" / "heat.png"
    plot_pruning_heatmaps(pruning_rate_table(records), out)
    png = out.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    # the PNG and its SVG, no temporary file left behind
    assert sorted(p.name for p in out.parent.iterdir()) == ["heat.png", "heat.svg"]


def test_plot_rejects_empty_table(tmp_path):
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_pruning_heatmaps(pruning_rate_table([]), tmp_path / "f.png")
