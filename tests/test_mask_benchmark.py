import json
import math

import pytest
import torch

from maskbench.masking.codec import entropy_bits, write_mask_file
from maskbench.steps.nlu.mask_benchmark import main
from maskbench.tracks.nlu.mask_benchmark import (
    bernoulli_entropy_bytes,
    bernoulli_masks,
    encoder_mask_shapes,
    mask_file_sizes,
)

TINY = ["--threads", "1", "--step-hidden", "32", "--step-layers", "1", "--step-heads", "4",
        "--step-intermediate", "64", "--step-vocab", "100", "--step-batch", "4", "--step-seq", "16",
        "--step-warmup", "1", "--step-repeats", "2", "--apply-hidden", "32", "--apply-layers", "2",
        "--apply-heads", "4", "--apply-intermediate", "64", "--apply-repeats", "2", "--decode-repeats", "1"]


@pytest.fixture(autouse=True)
def keep_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_encoder_mask_shapes_name_the_six_matrices_of_every_layer():
    shapes = encoder_mask_shapes(layers=2, hidden=8, intermediate=16)
    assert len(shapes) == 12
    assert shapes["bert.encoder.layer.0.attention.self.query"] == (8, 8)
    assert shapes["bert.encoder.layer.1.attention.output.dense"] == (8, 8)
    assert shapes["bert.encoder.layer.1.intermediate.dense"] == (16, 8)
    assert shapes["bert.encoder.layer.1.output.dense"] == (8, 16)


def test_bernoulli_entropy_is_n_times_binary_entropy():
    assert bernoulli_entropy_bytes(8, 0.5) == pytest.approx(1.0)
    assert bernoulli_entropy_bytes(8000, 0.9) == pytest.approx(entropy_bits(8000, 7200) / 8)


def test_benchmark_writes_every_number_consistently(tmp_path):
    # the same masks the benchmark makes, written independently: its payload must match the benchmark's
    shapes = encoder_mask_shapes(layers=2, hidden=32, intermediate=64)
    masks = bernoulli_masks(shapes, 0.9, seed=0)
    own = write_mask_file(tmp_path / "own.mask", masks, {"model_fingerprint": "x"})
    out = tmp_path / "bench" / "masks.json"

    assert main([*TINY, "--out", str(out), "--mask-files", str(tmp_path / "own.mask")]) == 0

    result = json.loads(out.read_text())
    for key in ("search_step_ratio", "finetune_over_plain_ratio", "mask_bytes_over_entropy", "mask_bytes_over_fp32",
                "apply_revert_ms"):
        assert math.isfinite(result[key]) and result[key] > 0, key
    assert result["revert_bit_exact"] is True
    assert result["device"] == "cpu" and result["threads"] == 1
    assert set(result["targets"]) == set(result["meets_targets"]) == {
        "search_step_ratio", "finetune_over_plain_ratio", "mask_bytes_over_entropy", "apply_revert_ms"}
    assert result["meets_targets"]["search_step_ratio"] == (result["search_step_ratio"] <= 1.1)

    step = result["search_step"]
    assert step["search_step_ratio"] == pytest.approx(step["search_step_ms"] / step["finetune_step_ms"])
    assert step["finetune_over_plain_ratio"] == pytest.approx(step["finetune_step_ms"] / step["plain_step_ms"])
    assert step["n_scores"] == sum(a * b for a, b in encoder_mask_shapes(1, 32, 64).values())
    assert len(step["search_step_all_ms"]) == len(step["finetune_step_all_ms"]) == len(step["plain_step_all_ms"]) == 2

    file = result["mask_file"]
    assert file["payload_bytes"] == own["payload_bytes"]
    assert file["n_elements"] == own["n_elements"] == sum(a * b for a, b in shapes.values())
    assert file["entropy_bytes"] == pytest.approx(own["global_entropy_bytes"])
    assert result["mask_bytes_over_entropy"] == pytest.approx(own["payload_bytes"] / own["global_entropy_bytes"])
    assert result["mask_bytes_over_fp32"] == pytest.approx(file["file_bytes"] / (4 * file["n_elements"]))
    assert file["file_bytes"] == file["payload_bytes"] + file["header_bytes"]

    real = result["real_masks"]
    assert real["median_payload_over_entropy"] == pytest.approx(result["mask_bytes_over_entropy"])
    assert real["files"][0]["file_bytes"] == own["file_bytes"]
    assert real["files"][0]["density"] == pytest.approx(own["density"])

    apply = result["apply"]
    assert apply["n_masked_matrices"] == 12
    assert apply["apply_revert_ms"] > 0 and apply["decode_ms"] > 0 and apply["fingerprint_ms"] > 0


def test_mask_file_sizes_reads_only_the_header(tmp_path):
    masks = bernoulli_masks({"a": (64, 64), "b": (32, 64)}, 0.8, seed=3)
    stats = write_mask_file(tmp_path / "m.mask", masks, {})
    sizes = mask_file_sizes(tmp_path / "m.mask")
    assert sizes["payload_bytes"] == stats["payload_bytes"]
    assert sizes["header_bytes"] == stats["header_bytes"]
    assert sizes["entropy_bytes"] == pytest.approx(stats["global_entropy_bytes"])
    assert sizes["module_entropy_bytes"] == pytest.approx(stats["entropy_bytes"])
    assert sizes["payload_over_entropy"] == pytest.approx(stats["payload_bytes"] / stats["global_entropy_bytes"])
