"""Shrinking a masked BERT encoder into a smaller dense one (tracks/gender/shrink.py, steps/gender/shrink.py): on a
tiny random BertModel (hidden 32, 4 heads of 8, 2 layers, FFN 64) with chosen heads and FFN neurons zeroed, the
removed units are exactly the chosen ones, the outputs equal the masked model's, parameters match a hand count,
constant units are folded into the next bias, a layer may lose every head or neuron, the saved model reloads bit for
bit, and the entry point benchmarks a real .mask file."""

import json

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from maskbench.masking.apply import MaskSet, MaskSwitch, model_fingerprint
from maskbench.masking.savings import count_parameters
from maskbench.steps.gender import shrink as gender_shrink
from maskbench.text.models import data_vocab_tokenizer
from maskbench.tracks.gender.models import load_encoder
from maskbench.tracks.gender.shrink import NoSelfAttention, load_shrunk, save_shrunk, shrink_encoder

HIDDEN, HEADS, HEAD, FFN = 32, 4, 8, 64
HEAD_PARAMS = 3 * (HEAD * HIDDEN + HEAD) + HIDDEN * HEAD   # Q, K, V rows with biases + O columns = 1048
NEURON_PARAMS = (HIDDEN + 1) + HIDDEN                       # W1 row + b1 entry + W2 column = 65


def tiny_encoder(seed: int = 0, vocab: int = 40) -> BertModel:
    """Random weights and random (non-zero) biases, so that a forgotten bias shows in the outputs."""
    torch.manual_seed(seed)
    model = BertModel(BertConfig(vocab_size=vocab, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=HEADS,
                                 intermediate_size=FFN, max_position_embeddings=32))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.normal_(0.0, 0.5)
    return model.eval()


def batch(vocab: int = 40) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab, (3, 7), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0   # padding: the softmax still sums to 1 over the real tokens
    return {"input_ids": ids, "attention_mask": mask}


@torch.no_grad()
def hidden(model) -> torch.Tensor:
    return model.eval()(**batch()).last_hidden_state


def head_rows(h: int) -> slice:
    return slice(h * HEAD, (h + 1) * HEAD)


@torch.no_grad()
def zero_v_head(model, layer: int, h: int, bias: bool) -> None:
    value = model.encoder.layer[layer].attention.self.value
    value.weight[head_rows(h)] = 0.0
    if bias:
        value.bias[head_rows(h)] = 0.0


@torch.no_grad()
def zero_o_head(model, layer: int, h: int) -> None:
    model.encoder.layer[layer].attention.output.dense.weight[:, head_rows(h)] = 0.0


@torch.no_grad()
def zero_ffn_input(model, layer: int, neurons: list[int], bias: bool) -> None:
    dense = model.encoder.layer[layer].intermediate.dense
    dense.weight[neurons] = 0.0
    if bias:
        dense.bias[neurons] = 0.0


@torch.no_grad()
def zero_ffn_output(model, layer: int, neurons: list[int]) -> None:
    model.encoder.layer[layer].output.dense.weight[:, neurons] = 0.0


def test_chosen_heads_and_neurons_are_removed_and_outputs_kept():
    model = tiny_encoder()
    zero_v_head(model, 0, 1, bias=True)           # V rows and bias: contributes nothing
    zero_o_head(model, 0, 3)                      # O columns: contributes nothing
    zero_ffn_input(model, 0, [0, 5], bias=False)  # constant act(b) != 0: folded into W2's bias
    zero_ffn_input(model, 0, [10, 11], bias=True)  # GELU(0) = 0: nothing to fold
    zero_ffn_output(model, 1, [20, 21, 22])
    with torch.no_grad():                         # a partial zero (half a head's V rows) stays inside the kept rows
        model.encoder.layer[1].attention.self.value.weight[:4] = 0.0
    before = {k: v.clone() for k, v in model.state_dict().items()}
    small, report = shrink_encoder(model)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())   # the input is untouched
    assert [(r["heads_removed"], r["heads_folded"], r["attention_removed"]) for r in report] == \
        [([1, 3], [], False), ([], [], False)]
    assert [(r["ffn_removed"], r["ffn_folded"]) for r in report] == [([0, 5, 10, 11], [0, 5]), ([20, 21, 22], [])]
    layer0, layer1 = small.encoder.layer
    assert layer0.attention.self.query.weight.shape == (2 * HEAD, HIDDEN)
    assert layer0.attention.self.num_attention_heads == 2 and layer0.attention.self.all_head_size == 2 * HEAD
    assert layer0.attention.output.dense.weight.shape == (HIDDEN, 2 * HEAD)
    assert layer0.intermediate.dense.weight.shape == (FFN - 4, HIDDEN)
    assert layer1.output.dense.weight.shape == (HIDDEN, FFN - 3)
    assert not layer1.attention.self.value.weight[:4].any()
    assert count_parameters(small) == count_parameters(model) - 2 * HEAD_PARAMS - 7 * NEURON_PARAMS
    assert (hidden(small) - hidden(model)).abs().max() < 1e-5


def test_a_head_with_zero_value_rows_but_a_bias_is_folded_into_the_output_bias():
    model = tiny_encoder(seed=1)
    zero_v_head(model, 1, 2, bias=False)   # the head outputs b_v for every token: O[:, cols] b_v is a constant
    small, report = shrink_encoder(model)
    assert report[1]["heads_removed"] == [2] and report[1]["heads_folded"] == [2]
    out = model.encoder.layer[1].attention.output.dense
    expected = out.bias.double() + out.weight.double()[:, head_rows(2)] @ \
        model.encoder.layer[1].attention.self.value.bias.double()[head_rows(2)]
    assert torch.allclose(small.encoder.layer[1].attention.output.dense.bias.double(), expected, atol=1e-6)
    assert not torch.allclose(expected, out.bias.double(), atol=1e-3)   # the fold matters
    assert count_parameters(small) == count_parameters(model) - HEAD_PARAMS
    assert (hidden(small) - hidden(model)).abs().max() < 1e-5


@pytest.fixture
def gutted():
    """Layer 1 loses every head (V rows zeroed, two of the biases kept: their constants are folded) and every FFN
    neuron (half by their input rows, half by their output columns); layer 0 loses head 0."""
    model = tiny_encoder(seed=2)
    for h in range(HEADS):
        zero_v_head(model, 1, h, bias=h < 2)
    zero_ffn_input(model, 1, list(range(FFN // 2)), bias=False)
    zero_ffn_output(model, 1, list(range(FFN // 2, FFN)))
    zero_o_head(model, 0, 0)
    return model


def test_a_layer_may_lose_every_head_and_every_neuron(gutted):
    small, report = shrink_encoder(gutted)
    assert report[1]["heads_removed"] == [0, 1, 2, 3] and report[1]["heads_folded"] == [2, 3]
    assert report[1]["attention_removed"] and report[1]["ffn_removed"] == list(range(FFN))
    attention = small.encoder.layer[1].attention
    assert isinstance(attention.self, NoSelfAttention)           # no Q, K, V at all
    assert attention.output.dense.weight.shape == (HIDDEN, 0)    # outputs its bias: the folded constants
    assert small.encoder.layer[1].intermediate.dense.weight.shape == (0, HIDDEN)
    assert count_parameters(small) == count_parameters(gutted) - 5 * HEAD_PARAMS - FFN * NEURON_PARAMS
    assert (hidden(small) - hidden(gutted)).abs().max() < 1e-5


def test_save_and_load_round_trip_bit_exact(gutted, tmp_path):
    small, _ = shrink_encoder(gutted)
    save_shrunk(small, tmp_path / "shrunk")
    loaded = load_shrunk(tmp_path / "shrunk")
    assert loaded.shrunk_layers == small.shrunk_layers
    assert loaded.shrunk_layers[1] == {"heads_kept": [], "intermediate_size": 0}
    assert small.state_dict().keys() == loaded.state_dict().keys()
    assert all(torch.equal(v, loaded.state_dict()[k]) for k, v in small.state_dict().items())
    assert torch.equal(hidden(loaded), hidden(small))
    with pytest.raises(FileNotFoundError, match="shrunk_layers.json: missing"):
        (tmp_path / "shrunk" / "shrunk_layers.json").unlink()
        load_shrunk(tmp_path / "shrunk")


def test_an_encoder_still_carrying_masks_is_refused():
    model = tiny_encoder()
    name = "encoder.layer.0.attention.self.value"
    mask = np.ones((HIDDEN, HIDDEN), dtype=bool)
    MaskSwitch(model).apply(MaskSet({name: mask}, {"model_fingerprint": model_fingerprint(model)}))
    with pytest.raises(ValueError, match="still carries mask parametrizations"):
        shrink_encoder(model)


# ------------------------------------------------------------------------------------------------ the entry point
def head_mask(model, heads: dict[int, list[int]], neurons: dict[int, list[int]]) -> MaskSet:
    """A head-granularity mask of ``model``: per layer the chosen heads' Q, K, V rows and O columns and the chosen
    FFN neurons' input rows pruned; the biases of empty rows are zeroed when it is applied."""
    masks = {}
    for i in range(model.config.num_hidden_layers):
        prefix = f"encoder.layer.{i}."
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "intermediate.dense", "output.dense"):
            weight = dict(model.named_modules())[prefix + part].weight
            masks[prefix + part] = np.ones(tuple(weight.shape), dtype=bool)
        for h in heads.get(i, []):
            for part in ("query", "key", "value"):
                masks[f"{prefix}attention.self.{part}"][head_rows(h)] = False
            masks[f"{prefix}attention.output.dense"][:, head_rows(h)] = False
        masks[f"{prefix}intermediate.dense"][neurons.get(i, [])] = False
    return MaskSet(masks, {"model_fingerprint": model_fingerprint(model), "zero_bias_of_empty_rows": True,
                           "granularity": "head"})


def test_entry_point_benchmarks_a_mask_file(tmp_path):
    folder = tmp_path / "encoder"
    tokenizer = data_vocab_tokenizer([s.lower() for s in gender_shrink.SENTENCES], folder)
    model = tiny_encoder(seed=3, vocab=len(tokenizer))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    encoder, _ = load_encoder(folder)
    head_mask(encoder, {0: [1], 1: [0, 3]}, {1: list(range(10))}).save(tmp_path / "a.mask")
    out = tmp_path / "structured.json"
    gender_shrink.main(["--model", str(folder), "--masks", str(tmp_path / "a.mask"), "--out", str(out),
                        "--batch", "4", "--length", "8", "--repeats", "2", "--rounds", "2", "--threads", "1",
                        "--save-dir", str(tmp_path / "shrunk")])
    result = json.loads(out.read_text())
    assert {"model", "records", "batch", "length", "repeats", "threads", "machine", "provenance"} <= set(result)
    assert result["batch"] == 4 and result["length"] == 8 and result["machine"]["torch_threads"] >= 1
    record, = result["records"]
    assert record["max_abs_diff"] < 1e-5
    assert record["heads_removed"] == 3 and record["heads_total"] == 2 * HEADS
    assert record["ffn_removed"] == 10 and record["ffn_total"] == 2 * FFN
    assert [r["heads_removed"] for r in record["layers"]] == [[1], [0, 3]]
    assert [r["ffn_removed"] for r in record["layers"]] == [0, 10]
    assert record["params_shrunk"] == record["params_dense"] - 3 * HEAD_PARAMS - 10 * NEURON_PARAMS
    assert record["params_ratio"] == pytest.approx(record["params_shrunk"] / record["params_dense"])
    assert record["latency_ratio"] == pytest.approx(record["latency_shrunk_s"] / record["latency_dense_s"])
    assert len(record["latency_rounds_s"]["dense"]) == 2 and record["latency_dense_s"] > 0
    assert count_parameters(load_shrunk(record["shrunk_model"])) == record["params_shrunk"]


def test_a_missing_mask_file_is_named_before_any_model_is_loaded(tmp_path):
    missing = tmp_path / "nowhere" / "b.mask"
    with pytest.raises(FileNotFoundError, match="b.mask: mask file not found"):
        gender_shrink.main(["--model", str(tmp_path / "no_model"), "--masks", str(missing),
                            "--out", str(tmp_path / "x.json")])
    assert not (tmp_path / "x.json").exists()
