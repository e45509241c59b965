"""The gender track's corpus cut, keyword masks, the Kaneko-Bollegala objective (both forms) against hand-computed
values, paper B's pruning granularities on a tiny BERT, and a short debiasing run of each kind."""

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from maskbench.masking.deciders import MovementSigmoid
from maskbench.masking.engine import attach
from maskbench.masking.selectors import ENCODER_KINDS
from maskbench.text.models import data_vocab_tokenizer
from maskbench.tracks.gender.corpus import CorpusError, categorize, cut_corpus, generate_sentences
from maskbench.tracks.gender.encoding import Encoded, encode_keyed, hidden_states, trim_padding
from maskbench.tracks.gender.objective import (
    AttributeVectors,
    KanekoBollegala,
    debias_kaneko,
    debias_paper_b,
    keyword_embeddings,
    layer_indices,
    regulariser_kaneko,
    regulariser_paper_b,
)
from maskbench.tracks.gender.pruning import (
    HEAD_MATRICES,
    frozen_kinds,
    granularity_plan,
    heads_pruned,
    heads_pruned_nn_pruning,
    layer_density,
)
from maskbench.tracks.gender.training import DebiasSpec, batches_per_epoch, run_debias
from maskbench.tracks.gender.wordlists import read_word_list
from maskbench.training.hparams import TrainHParams

DATA = Path(__file__).resolve().parents[1] / "data/gender"
MALE, FEMALE, STEREO = {"he", "man", "king"}, {"she", "woman", "queen"}, {"doctor", "nurse"}


# ------------------------------------------------------------------------------------------------ corpus
def test_categorize_follows_paper_b_code():
    assert categorize("The man saw a doctor.", MALE, FEMALE, STEREO).category == "male"
    assert categorize("The man saw a doctor.", MALE, FEMALE, STEREO).keywords == ("man",)
    assert categorize("She's a queen!", MALE, FEMALE, STEREO).keywords == ("queen", "she")
    assert categorize("A nurse and a doctor.", MALE, FEMALE, STEREO).keywords == ("doctor", "nurse")
    assert categorize("The man and the woman.", MALE, FEMALE, STEREO) is None   # both genders: dropped
    assert categorize("Nothing here.", MALE, FEMALE, STEREO) is None
    assert categorize("The doctors met.", MALE, FEMALE, STEREO) is None         # whole words only


def test_cut_corpus_holds_out_a_seeded_part_and_refuses_a_small_corpus():
    lines = [f"man number {i}" for i in range(5)] + [f"woman number {i}" for i in range(4)] + \
            [f"doctor number {i}" for i in range(3)] + ["man and woman", "man number 0"]
    cut = cut_corpus(lines, MALE, FEMALE, STEREO, heldout=2, seed=0)
    assert {c: (len(p["train"]), len(p["heldout"])) for c, p in cut.items()} == \
        {"male": (3, 2), "female": (2, 2), "stereotype": (1, 2)}
    again = cut_corpus(lines, MALE, FEMALE, STEREO, heldout=2, seed=0)
    assert [r.text for r in again["male"]["heldout"]] == [r.text for r in cut["male"]["heldout"]]
    with pytest.raises(CorpusError, match="only 3 stereotype sentences"):
        cut_corpus(lines, MALE, FEMALE, STEREO, heldout=3, seed=0)


def test_generated_corpus_over_the_real_lists_lands_in_its_categories():
    male, female, stereo = (read_word_list(DATA / f) for f in ("male.txt", "female.txt", "stereotype.txt"))
    lines = generate_sentences(male, female, stereo, 200, seed=0, mixed=30)
    assert len(lines) == 630
    cut = cut_corpus(lines, male, female, stereo, heldout=20, seed=0)
    # every generated line of a category is kept in it (distinct lines), the mixed ones are dropped
    assert {c: len(p["train"]) + len(p["heldout"]) for c, p in cut.items()} == \
        {"male": 200, "female": 200, "stereotype": 200}


# ------------------------------------------------------------------------------------------------ keyword masks
@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    texts = ["the man saw a doctor", "the woman saw a nurse", "a king and a queen", "doctors and nurses"]
    return data_vocab_tokenizer(texts, tmp_path_factory.mktemp("vocab"))


def test_keyword_mask_marks_the_keyword_tokens(tokenizer):
    rows = [categorize("the man saw a doctor", MALE, FEMALE, STEREO),
            categorize("a nurse and a doctor", MALE, FEMALE, STEREO)]
    enc = encode_keyed(tokenizer, rows, max_length=8)
    # [CLS] the man saw a doctor [SEP] [PAD]: only "man" (position 2)
    assert enc.keyword_mask[0].tolist() == [0, 0, 1, 0, 0, 0, 0, 0]
    assert enc.keyword_mask[1].tolist() == [0, 0, 1, 0, 0, 1, 0, 0]
    cut_off = encode_keyed(tokenizer, rows, max_length=4)   # "doctor" at position 5 is cut: row 1 keeps "nurse"
    assert len(cut_off) == 2 and cut_off.dropped == 0
    gone = encode_keyed(tokenizer, [categorize("the woman saw a nurse", MALE, FEMALE, STEREO)] * 2
                        + rows[:1], max_length=2)
    assert len(gone) == 0 and gone.dropped == 3


# ------------------------------------------------------------------------------------------------ the objective
def test_layer_modes():
    assert layer_indices("first", 7) == [0] and layer_indices("last", 7) == [6]
    assert layer_indices("all", 3) == [0, 1, 2] and layer_indices("intermediate", 13) == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="intermediate"):
        layer_indices("intermediate", 3)


def test_keyword_embeddings_average_the_sub_tokens():
    states = torch.arange(12.0).reshape(1, 2, 3, 2)   # one layer, 2 sentences, 3 positions, hidden 2
    mask = torch.tensor([[1, 1, 0], [0, 0, 1]])
    assert keyword_embeddings(states, mask).tolist() == [[[1.0, 2.0], [10.0, 11.0]]]
    with pytest.raises(ValueError, match="no keyword"):
        keyword_embeddings(states, torch.tensor([[1, 0, 0], [0, 0, 0]]))


def test_debias_terms_by_hand():
    rows = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    # paper B: r1 . (v_m + v_f) = 1 + 2 = 3, r2: 2 + 0 = 2 -> mean(9, 4) = 6.5
    assert debias_paper_b(rows, torch.tensor([[1.0, 1.0], [2.0, 0.0]])).item() == pytest.approx(6.5)
    # kaneko, one layer: male (1, 2) -> mean 1.5 -> 2.25; female (2, 0) -> mean 1 -> 1; sum 3.25
    vectors = torch.tensor([[[1.0, 1.0]], [[2.0, 0.0]]])
    assert debias_kaneko(rows.unsqueeze(0), vectors).item() == pytest.approx(3.25)


def test_regularisers_by_hand():
    e = torch.tensor([[[1.0, 2.0]], [[0.0, 1.0]]])   # 2 layers, 1 sentence
    assert regulariser_paper_b(e, torch.zeros_like(e)).item() == pytest.approx((5.0 + 1.0) / 2)
    states = torch.tensor([[[[1.0, 1.0], [2.0, 0.0]]]])    # 1 layer, 1 sentence, 2 tokens
    # token 1 is padding: only token 0 counts, mean over hidden of (1, 1) = 1
    assert regulariser_kaneko(states, torch.zeros_like(states), torch.tensor([[1, 0]])).item() == pytest.approx(1.0)
    assert regulariser_kaneko(states, torch.zeros_like(states), torch.tensor([[1, 1]])).item() == pytest.approx(1.5)


# ------------------------------------------------------------------------------------------------ a tiny model
def tiny_bert(vocab_size: int, seed: int = 0) -> BertModel:
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=5, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    return BertModel(config).eval()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    male, female, stereo = (read_word_list(DATA / f) for f in ("male.txt", "female.txt", "stereotype.txt"))
    lines = generate_sentences(male, female, stereo, 60, seed=0)
    cut = cut_corpus(lines, male, female, stereo, heldout=10, seed=0)
    tok = data_vocab_tokenizer(lines, tmp_path_factory.mktemp("corpus_vocab"))
    return tok, {c: encode_keyed(tok, cut[c]["train"], 16) for c in cut}


def test_attribute_vectors_are_the_mean_keyword_embeddings(corpus):
    tok, sets = corpus
    model = tiny_bert(len(tok))
    vectors = AttributeVectors(sets["male"], sets["female"], "last", "paper_b", "cpu", batch_size=7)
    value = vectors.refresh(model)
    with torch.no_grad():
        male = keyword_embeddings(hidden_states(model, sets["male"].rows(slice(None)), "cpu")[[-1]],
                                  sets["male"].keyword_mask)
    assert value.shape == (2, 16)
    torch.testing.assert_close(value[0], male[0].mean(dim=0), rtol=1e-5, atol=1e-6)
    per_layer = AttributeVectors(sets["male"], sets["female"], "all", "kaneko", "cpu").refresh(model)
    assert per_layer.shape == (2, 6, 16)


def test_regulariser_through_the_bypass_is_zero_while_nothing_is_pruned(corpus):
    """Scores start at 0 (sigmoid 0.5 > tau 0): the masked model is the original, so in eval mode the
    regulariser to the bypassed network is exactly 0 and the loss is alpha * L_debias."""
    tok, sets = corpus
    model = tiny_bert(len(tok))
    decider = MovementSigmoid(10, 0.0, 0.1, schedule="linear")
    masked = attach(model, decider, ENCODER_KINDS, granularity_plan("block", 8), zero_bias_of_empty_rows=True)
    model.eval()
    vectors = AttributeVectors(sets["male"], sets["female"], "all", "paper_b", "cpu")
    vectors.refresh(model)

    def original(batch):
        with masked.bypass():
            return hidden_states(model, batch, "cpu")

    objective = KanekoBollegala(vectors, original, "all", "token", "paper_b", "cpu")
    batch = {"targets": sets["stereotype"].rows(slice(0, 8)), "attributes": sets["male"].rows(slice(0, 8))}
    loss, logs = objective(model, batch)
    assert float(logs["loss_regularize"]) == 0.0  # the terms are device scalars, read at the loop's logged steps
    assert loss.item() == pytest.approx(0.2 * float(logs["loss_debias"]), rel=1e-6)


# ------------------------------------------------------------------------------------------------ granularities
def test_each_granularity_expands_to_whole_blocks():
    model = tiny_bert(30)
    for plan, shape in ((granularity_plan("block", 8), (2, 2)), (granularity_plan("head", head_size=8), (2, 1))):
        masked = attach(model, MovementSigmoid(10, 0.0, 0.1), ENCODER_KINDS, plan)
        query = masked.masks["encoder.layer.0.attention.self.query"]
        assert tuple(query.scores.shape) == shape
        with torch.no_grad():
            query.scores.copy_(torch.tensor([[-5.0, 0.0], [0.0, 0.0]]) if shape == (2, 2)
                               else torch.tensor([[-5.0], [0.0]]))
        hard = query.hard_mask()
        assert not hard[:8, :8].any() and hard[8:].all()                     # the whole first block or head
        assert hard[:8, 8:].all() == (shape == (2, 2))
        ffn = masked.masks["encoder.layer.0.intermediate.dense"]
        assert tuple(ffn.scores.shape) == (32,)                                # one score per FFN neuron
        masked.detach()


def test_pruning_a_heads_value_block_removes_that_head():
    """Head 0's rows of V masked (bias zeroed with them): the attention's context for head 0 is exactly zero,
    head 1's is untouched, and heads_pruned reads the head off V."""
    model = tiny_bert(30)
    attention = model.encoder.layer[0].attention.self
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        before = attention(x)[0]
    masked = attach(model, MovementSigmoid(10, 0.0, 0.1), ENCODER_KINDS, granularity_plan("head", head_size=8),
                    zero_bias_of_empty_rows=True)
    value = masked.masks["encoder.layer.0.attention.self.value"]
    with torch.no_grad():
        value.scores.copy_(torch.tensor([[-5.0], [0.0]]))
        after = attention(x)[0]
    assert torch.equal(after[..., :8], torch.zeros_like(after[..., :8]))
    torch.testing.assert_close(after[..., 8:], before[..., 8:])
    grid = heads_pruned(masked.hard_masks(), head_size=8)
    assert grid.shape == (5, 2) and grid.tolist()[0] == [True, False] and grid.sum() == 1
    rows = layer_density(masked.hard_masks())
    first = next(r for r in rows if r["layer"] == 0 and r["part"] == "attention")
    # V lost half its rows: (3 * 256 + 128) / (4 * 256)
    assert first["density"] == pytest.approx((3 * 256 + 128) / 1024)


# ------------------------------------------------------------------------------------------------ whole runs
@pytest.mark.parametrize("granularity,freeze", [("block", True), ("head", False), ("none", False)])
def test_a_short_run_of_each_kind(corpus, granularity, freeze):
    tok, sets = corpus
    model = tiny_bert(len(tok))
    frozen_before = {k: v.clone() for k, v in model.state_dict().items()}
    spec = DebiasSpec(variant="paper_b", layers="last", mode="token", granularity=granularity, block=8,
                      freeze_weights=freeze, score_learning_rate=0.5)
    result = run_debias(model, sets, spec, TrainHParams(epochs=2, batch_size=16, learning_rate=1e-3, warmup=0,
                                                        log_every=1), seed=1, device="cpu")
    curve = result["curve"]
    assert len(result["vectors"]) == 2                      # refreshed at the start of both epochs
    assert {"loss_debias", "loss_regularize"} <= set(curve[0])
    assert curve[-1]["loss_debias"] < curve[0]["loss_debias"]
    if freeze:
        masked = result["masked"]
        masked.detach()
        for key, value in model.state_dict().items():
            assert torch.equal(value, frozen_before[key]), key   # only the scores trained
    else:
        changed = [k for k, v in model.state_dict().items() if k in frozen_before
                   and not torch.equal(v, frozen_before[k])]
        assert changed


def test_debias_only_must_train_the_weights():
    with pytest.raises(ValueError, match="freeze_weights false"):
        DebiasSpec(granularity="none", freeze_weights=True).check()
    with pytest.raises(ValueError, match="layers 'middle'"):
        DebiasSpec(layers="middle").check()


# ------------------------------------------------------------------------------------------------ threshold schedule
def test_cubic_threshold_is_nn_prunings_schedule_without_warm_up():
    """Paper B's code calls nn_pruning's ``schedule_threshold(step, total_step, training)`` with warmup_steps -1, so
    with initial_warmup 1 and final_warmup 10: tau = tau_f + (tau_i - tau_f) m^3, m = 1 - (t + 1) / (T + 11).
    T = 89, tau 0 -> 0.1: t = 0: m = 0.99, tau = 0.1 - 0.1 * 0.970299 = 0.0029701; t = 49: m = 0.5, tau = 0.0875;
    t = 88 (the last step): m = 0.11, tau = 0.1 - 0.1 * 0.001331 = 0.0998669. The gender runs' decider
    (``DebiasSpec.threshold_schedule`` cubic) follows it; evaluation uses tau_f, as nn_pruning does."""
    decider = MovementSigmoid(89, 0.0, 0.1, schedule="cubic")
    for step, tau in ((0, 0.0029701), (49, 0.0875), (88, 0.0998669)):
        decider.set_step(step, 89)
        assert decider.tau(training=True) == pytest.approx(tau, abs=1e-12)
        assert decider.tau(training=False) == 0.1
    linear = MovementSigmoid(89, 0.0, 0.1, schedule="linear")
    linear.set_step(49, 89)
    assert linear.tau(training=True) == pytest.approx(0.1 * 49 / 89)


def test_head_matrices_choose_which_scores_train(corpus):
    """head_matrices [value] (paper B's text): every matrix is masked, but only V's head scores train; the others
    stay exactly 0 (sigmoid 0.5 > tau: kept) and the optimiser never sees them."""
    tok, sets = corpus
    model = tiny_bert(len(tok))
    spec = DebiasSpec(variant="paper_b", layers="last", mode="token", granularity="head", head_matrices=["value"],
                      score_learning_rate=0.5)
    result = run_debias(model, sets, spec, TrainHParams(epochs=1, batch_size=16, learning_rate=1e-3, warmup=0,
                                                        log_every=1), seed=1, device="cpu")
    masked = result["masked"]
    moved = {name for name, m in masked.masks.items() if bool((m.scores.detach() != 0).any())}
    assert moved == {f"encoder.layer.{i}.attention.self.value" for i in range(5)}
    assert all(m.hard_mask().all() for name, m in masked.masks.items() if name not in moved)
    assert frozen_kinds(["value", "attention_output"]) == {"query", "key", "ffn_in", "ffn_out"}
    assert frozen_kinds(HEAD_MATRICES) == set()
    with pytest.raises(ValueError, match="head_matrices \\['values'\\]"):
        DebiasSpec(granularity="head", head_matrices=["values"]).check()
    with pytest.raises(ValueError, match="threshold of 0.5 or more"):
        DebiasSpec(granularity="head", head_matrices=["value"], threshold_end=0.6).check()
    masked.detach()


def test_heads_pruned_counted_as_nn_pruning_does():
    """Three layers of two heads of size 2 (hidden 4). Layer 0: Q's head-0 rows all masked, V whole -> nn_pruning
    removes head 0 (any of Q, K, V all zero), ours keeps it (V alive). Layer 1: V's head-1 rows masked -> both
    count head 1. Layer 2: Q's head 0 and K's head 1 masked -> every head would go, nn_pruning keeps head 0."""
    keep = np.ones((4, 4), dtype=bool)

    def without(*rows):
        mask = keep.copy()
        mask[list(rows)] = False
        return mask

    def layer(i, query, key, value):
        prefix = f"encoder.layer.{i}.attention.self."
        return {prefix + "query": query, prefix + "key": key, prefix + "value": value}

    partial = keep.copy()
    partial[0, :3] = False  # one weight of head 0's rows survives: the head stays
    masks = {**layer(0, without(0, 1), partial, keep), **layer(1, keep, keep, without(2, 3)),
             **layer(2, without(0, 1), without(2, 3), keep),
             "encoder.layer.0.attention.output.dense": np.zeros((4, 4), dtype=bool)}   # not read
    assert heads_pruned_nn_pruning(masks, head_size=2).astype(int).tolist() == [[1, 0], [0, 1], [0, 1]]
    assert heads_pruned(masks, head_size=2).astype(int).tolist() == [[0, 0], [0, 1], [0, 0]]


# ------------------------------------------------------------------------------------------------ batching
def test_batches_per_epoch_by_hand():
    """context_debias counts as context-debias's create_dataloader: int(min(|male|, |female|) / batch), the
    targets' number playing no part; paired: every target once."""
    assert batches_per_epoch("context_debias", n_targets=30, n_male=10, n_female=7, batch_size=3) == 2   # 7 // 3
    assert batches_per_epoch("context_debias", n_targets=1, n_male=7, n_female=10, batch_size=3) == 2
    assert batches_per_epoch("context_debias", n_targets=30, n_male=10, n_female=12, batch_size=5) == 2  # 10 // 5
    assert batches_per_epoch("paired", n_targets=30, n_male=10, n_female=7, batch_size=3) == 10
    assert batches_per_epoch("paired", n_targets=10, n_male=10, n_female=7, batch_size=3) == 4          # 3 + 1 short
    with pytest.raises(ValueError, match="no whole batch of 8"):
        batches_per_epoch("context_debias", n_targets=30, n_male=10, n_female=7, batch_size=8)
    with pytest.raises(ValueError, match="batching 'random'"):
        DebiasSpec(batching="random").check()


def test_trim_padding_cuts_to_the_longest_sentence():
    batch = {"input_ids": torch.tensor([[5, 6, 0, 0, 0], [5, 6, 7, 0, 0]]),
             "attention_mask": torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]),
             "keyword_mask": torch.tensor([[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]])}
    trimmed = trim_padding(batch)
    assert trimmed["input_ids"].tolist() == [[5, 6, 0], [5, 6, 7]]
    assert trimmed["keyword_mask"].tolist() == [[0, 1, 0], [0, 0, 1]]


def first(encoded, n):
    return Encoded(*(getattr(encoded, key)[:n] for key in ("input_ids", "attention_mask", "keyword_mask")))


@pytest.mark.parametrize("batching", ["paired", "context_debias"])
def test_context_debias_batching_feeds_no_attention_mask(corpus, batching):
    """30 targets, 10 male and 7 female sentences, batch 3, one epoch: context_debias takes 7 // 3 = 2 steps and
    every forward pass (targets, attributes, the original copy, the attribute vectors) gets the token ids alone,
    each batch cut to its longest sentence; paired takes ceil(30 / 3) = 10 steps, every pass with the mask."""
    tok, full = corpus
    sets = {"male": first(full["male"], 10), "female": first(full["female"], 7),
            "stereotype": first(full["stereotype"], 30)}
    assert [len(sets[k]) for k in ("male", "female", "stereotype")] == [10, 7, 30]
    model = tiny_bert(len(tok))
    calls = []

    def capture(module, args, kwargs):  # the deep copy made for the original model shares this hook
        calls.append({"mask": kwargs.get("attention_mask"), "width": kwargs["input_ids"].shape[1]})

    model.register_forward_pre_hook(capture, with_kwargs=True)
    spec = DebiasSpec(variant="kaneko", layers="all", mode="sentence", granularity="none", freeze_weights=False,
                      batching=batching)
    result = run_debias(model, sets, spec, TrainHParams(epochs=1, batch_size=3, learning_rate=1e-3, warmup=0,
                                                        log_every=1), seed=1, device="cpu")
    steps = {"paired": 10, "context_debias": 2}[batching]
    assert result["steps"] == steps and len(result["curve"]) == steps
    # each step: targets, attributes, the original's attributes; before the first, the vectors of both genders
    assert len(calls) >= 3 * steps + 2
    if batching == "context_debias":
        assert all(call["mask"] is None for call in calls)
        assert max(call["width"] for call in calls) < 16                     # padded to the batch's longest
    else:
        assert all(call["mask"] is not None for call in calls)
        assert {call["width"] for call in calls} == {16}
