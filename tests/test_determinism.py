"""Determinism, shown: the same fine-tuning and the same mask search run twice with the same seed write files
with the same bytes (CPU); the deterministic switch makes torch refuse non-deterministic kernels."""

import hashlib
import json
import shutil

import pytest
import torch

from maskbench import runtime
from maskbench.data.schema import write_prepared
from maskbench.data.synthetic import generate
from maskbench.steps.nlu import finetune as finetune_cli
from maskbench.steps.nlu import mask_search

TINY_MODEL = {"name": "t", "init": "scratch", "tokenizer": "data_vocab",
              "bert_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                              "intermediate_size": 32, "max_position_embeddings": 64}}
HP = {"epochs": 2, "batch_size": 16, "learning_rate": 1e-3, "warmup": 0.1, "max_length": 64}
SEARCH_HP = {"epochs": 1, "batch_size": 16, "learning_rate": 0.1, "lr_schedule": "constant", "max_length": 64}


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_runs_with_one_seed_write_the_same_bytes(tmp_path):
    for split, n in (("train", 48), ("dev", 16)):
        frame, labels = generate("nli", split, n, seed=0, rho=0.9)
        write_prepared(frame, labels, tmp_path / f"{split}.parquet", {"dataset": split, "task": "mnli"})
    hashes = []
    for _run in range(2):
        out = tmp_path / "model"
        shutil.rmtree(out, ignore_errors=True)  # the second run writes everything afresh
        (tmp_path / "m.mask").unlink(missing_ok=True)
        assert finetune_cli.main(["--train", str(tmp_path / "train.parquet"), "--dev", str(tmp_path / "dev.parquet"),
                                  "--model-spec", json.dumps(TINY_MODEL), "--hparams", json.dumps(HP),
                                  "--seed", "5", "--out-dir", str(out), "--threads", "1",
                                  "--deterministic", "1"]) == 0
        mask = tmp_path / "m.mask"
        assert mask_search.main(["--model-dir", str(out), "--train", str(tmp_path / "train.parquet"),
                                 "--hparams", json.dumps(SEARCH_HP), "--seed", "5", "--out", str(mask),
                                 "--summary", str(tmp_path / "m.json"), "--threads", "1"]) == 0
        # the mask file's header records only the arguments, the seed and versions: no clock, so its bytes repeat
        hashes.append((sha256(out / "model.safetensors"), sha256(mask)))
    assert hashes[0] == hashes[1]


def test_the_deterministic_switch_sets_torchs_flags():
    before = torch.are_deterministic_algorithms_enabled()
    try:
        runtime.set_deterministic(False)
        assert torch.are_deterministic_algorithms_enabled() == before
        runtime.set_deterministic(True)
        assert torch.are_deterministic_algorithms_enabled() and not torch.backends.cudnn.benchmark
    finally:
        torch.use_deterministic_algorithms(before)


@pytest.mark.parametrize("flag", ["2", "-1"])
def test_the_switch_takes_0_or_1(flag, tmp_path):
    with pytest.raises(ValueError, match="--deterministic"):
        finetune_cli.main(["--train", str(tmp_path / "t.parquet"), "--out-dir", str(tmp_path / "o"), "--seed", "1",
                           "--model-spec", "{}", "--deterministic", flag])
