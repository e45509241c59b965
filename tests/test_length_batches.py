"""Length-grouped training batches and length-sorted scoring (configs/real.yaml's speed settings): every example once
an epoch, batches cut from length-sorted runs, a killed run resumed bit-identically, and scoring that returns the
same predictions in the data's order."""

import json

import numpy as np
import pytest
import torch
from test_resume import (  # noqa: F401  (data: the fixture)
    TINY_HP,
    TINY_MODEL,
    Killed,
    count_steps,
    curve_without_seconds,
    data,
    finetune,
    kill_at,
)
from tiny_models import tiny_bert

from maskbench.training.batches import LengthGroupedBatches
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit

LENGTHS = [3, 9, 1, 7, 10, 2, 8, 4, 6, 5]  # a permutation of 1..10


def epoch_batches(lengths, batch_size, group, seed=0):
    return list(LengthGroupedBatches(lengths, batch_size, group, torch.Generator().manual_seed(seed)))


def test_one_run_over_everything_gives_the_tightest_batches():
    """group * batch_size >= n: the whole epoch is one sorted run, so the batches are the lengths 10-9-8, 7-6-5,
    4-3-2 and 1 (by hand from LENGTHS), in a shuffled order."""
    batches = epoch_batches(LENGTHS, 3, 4)
    as_lengths = sorted((sorted((LENGTHS[i] for i in b), reverse=True) for b in batches), reverse=True)
    assert as_lengths == [[10, 9, 8], [7, 6, 5], [4, 3, 2], [1]]
    assert len(batches) == len(LengthGroupedBatches(LENGTHS, 3, 4, torch.Generator())) == 4  # ceil(10 / 3)


def test_every_example_once_an_epoch_and_each_batch_from_one_sorted_run():
    """group 1, batch 2: each batch is a run of two drawn items, sorted longest first; the union is every index."""
    for seed in range(5):
        batches = epoch_batches(LENGTHS, 2, 1, seed)
        assert sorted(i for b in batches for i in b) == list(range(10))
        assert all(LENGTHS[b[0]] >= LENGTHS[b[-1]] for b in batches)
        assert len(batches) == 5


def test_the_same_generator_state_gives_the_same_epoch_and_the_next_epoch_differs():
    g = torch.Generator().manual_seed(7)
    sampler = LengthGroupedBatches(LENGTHS, 2, 2, g)
    state = g.get_state()
    first = list(sampler)
    second = list(sampler)
    g.set_state(state)
    assert list(sampler) == first and first != second


def test_a_group_below_one_is_refused():
    with pytest.raises(ValueError, match="length_grouped"):
        LengthGroupedBatches(LENGTHS, 2, 0, torch.Generator())


def test_fit_refuses_length_groups_without_lengths():
    class NoLengths(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return i

    hp = TrainHParams(epochs=1, batch_size=2, length_grouped=2)
    with pytest.raises(ValueError, match="length_grouped batches need a dataset with `lengths`"):
        fit(torch.nn.Linear(2, 2), NoLengths(), lambda m, b: (torch.zeros(()), {}), hp, 0, "cpu")


GROUPED_HP = {**TINY_HP, "length_grouped": 2, "length_sorted_eval": True}


def finetune_grouped(data, out, *extra):  # noqa: F811
    """test_resume's tiny fine-tuning with length-grouped batches and length-sorted dev scoring."""
    from maskbench.steps.nlu import finetune as finetune_cli

    return finetune_cli.main(["--train", str(data / "train.parquet"), "--dev", str(data / "dev.parquet"),
                              "--model-spec", json.dumps(TINY_MODEL), "--hparams", json.dumps(GROUPED_HP),
                              "--seed", "3", "--out-dir", str(out), "--threads", "1", *extra])


def test_a_killed_length_grouped_fine_tuning_resumes_bit_identically(data, tmp_path, monkeypatch):  # noqa: F811
    straight = tmp_path / "straight"
    assert finetune_grouped(data, straight) == 0
    out = tmp_path / "killed"
    kill_at(monkeypatch, 7)
    with pytest.raises(Killed):
        finetune_grouped(data, out, "--checkpoint-every", "3")
    monkeypatch.undo()
    ran = count_steps(monkeypatch)
    assert finetune_grouped(data, out, "--checkpoint-every", "3") == 0
    assert ran[0] == 6  # resumed from the state saved after step 6
    assert (out / "model.safetensors").read_bytes() == (straight / "model.safetensors").read_bytes()
    assert curve_without_seconds(out).equals(curve_without_seconds(straight))


def test_length_grouped_batches_change_the_run_and_random_batches_are_the_default(data, tmp_path):  # noqa: F811
    grouped, plain = tmp_path / "grouped", tmp_path / "plain"
    assert finetune_grouped(data, grouped) == 0
    assert finetune(data, plain) == 0
    assert (grouped / "model.safetensors").read_bytes() != (plain / "model.safetensors").read_bytes()
    assert json.loads((plain / "train_summary.json").read_text())["hparams"]["length_grouped"] == 0


def test_length_sorted_scoring_returns_the_same_predictions_in_the_data_order():
    """Rows of lengths 3..12 scored in sorted batches of 4 equal each row scored alone (no padding at all)."""
    from maskbench.text.batches import predict_proba

    class Rows(torch.utils.data.Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.input_ids = [torch.randint(5, 50, (n,), generator=g).tolist() for n in (7, 3, 12, 5, 9, 4, 11, 6)]

        @property
        def lengths(self):
            return [len(r) for r in self.input_ids]

        def __len__(self):
            return len(self.input_ids)

        def collate(self, indices):
            width = max(len(self.input_ids[i]) for i in indices)
            ids = torch.zeros((len(indices), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, i in enumerate(indices):
                ids[row, :len(self.input_ids[i])] = torch.tensor(self.input_ids[i])
                mask[row, :len(self.input_ids[i])] = 1
            return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}

    model, rows = tiny_bert(), Rows()
    alone = np.concatenate([predict_proba(model, _Single(rows, i), 1, "cpu") for i in range(len(rows))])
    in_order = predict_proba(model, rows, 4, "cpu")
    in_sorted_batches = predict_proba(model, rows, 4, "cpu", length_sorted=True)
    np.testing.assert_allclose(in_sorted_batches, alone, rtol=0, atol=1e-6)
    np.testing.assert_allclose(in_order, alone, rtol=0, atol=1e-6)
    assert (in_sorted_batches.argmax(1) == alone.argmax(1)).all()


class _Single(torch.utils.data.Dataset):
    """One row of a dataset as a dataset of its own."""

    def __init__(self, rows, i):
        self.rows, self.i = rows, i

    @property
    def lengths(self):
        return [self.rows.lengths[self.i]]

    def __len__(self):
        return 1

    def collate(self, indices):
        return self.rows.collate([self.i])
