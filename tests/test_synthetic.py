"""The synthetic shortcut benchmark: determinism, rho, and that each label is a function of the text."""

import pandas as pd
import pytest

from maskbench.data.synthetic import FACT_LABELS, HANS_LABELS, NLI_LABELS, PARAPHRASE_LABELS, generate

ALL_SPLITS = [
    ("nli", "train"), ("nli", "dev"), ("nli", "hans"), ("nli", "negation_pool"),
    ("paraphrase", "train"), ("paraphrase", "dev"), ("paraphrase", "paws"),
    ("fact", "train"), ("fact", "dev"), ("fact", "symmetric"),
]


@pytest.mark.parametrize("generator,split", ALL_SPLITS)
def test_same_seed_same_data_other_seed_other_data(generator, split):
    a, labels_a = generate(generator, split, 200, seed=3, rho=0.9)
    b, labels_b = generate(generator, split, 200, seed=3, rho=0.9)
    c, _ = generate(generator, split, 200, seed=4, rho=0.9)
    pd.testing.assert_frame_equal(a, b)
    assert labels_a == labels_b
    assert not a[["text_a", "text_b"]].equals(c[["text_a", "text_b"]])
    assert a.id.is_unique and len(a) == 200
    assert set(a.label) <= set(range(len(labels_a)))


@pytest.mark.parametrize("generator", ["nli", "paraphrase", "fact"])
@pytest.mark.parametrize("rho", [0.6, 0.95])
def test_rho_is_the_share_of_bias_aligned_training_examples(generator, rho):
    frame, _ = generate(generator, "train", 4000, seed=0, rho=rho)
    # binomial standard error at n=4000 is < 0.008; allow 4 of them
    assert abs(frame.bias_aligned.mean() - rho) < 0.03


def test_labels_are_a_function_of_the_text():
    # one text pair never carries two labels, across every split of a task (ID and OOD alike)
    for generator, splits in {"nli": ["train", "dev", "negation_pool"], "paraphrase": ["train", "dev", "paws"],
                              "fact": ["train", "dev"]}.items():
        frames = []
        for split in splits:
            frame, labels = generate(generator, split, 3000, seed=0, rho=0.7)
            frames.append(frame.assign(name=[labels[i] for i in frame.label]))
        both = pd.concat(frames)
        assert both.groupby(["text_a", "text_b"]).name.nunique().max() == 1, generator


def test_hans_like_set_is_balanced_and_all_high_overlap():
    frame, labels = generate("nli", "hans", 3000, seed=0)
    assert labels == HANS_LABELS
    assert abs((frame.label == 0).mean() - 0.5) < 0.03
    assert set(frame.heuristic) == {"lexical_overlap", "subsequence", "constituent"}
    # every hypothesis word occurs in the premise: overlap no longer tells the label
    for a, b in zip(frame.text_a, frame.text_b, strict=True):
        assert set(b.split()) <= set(a.split()) | {"was", "by"}, (a, b)


def test_hand_checked_nli_examples():
    frame, labels = generate("nli", "train", 3000, seed=0, rho=0.5)
    by_case = {c: g.iloc[0] for c, g in frame.groupby("case")}
    swap = by_case["swap_roles"]
    p, h = swap.text_a.split(), swap.text_b.split()
    assert labels[swap.label] == "neutral" and (h[1], h[4]) == (p[4], p[1])  # "the A verb the B" -> "the B verb the A"
    neg = by_case["neg_contradiction"]
    assert labels[neg.label] == "contradiction" and " did not " in neg.text_b
    refused = by_case["refused_entailment"]
    assert labels[refused.label] == "entailment" and " did not " in refused.text_b and "refused to" in refused.text_a
    assert labels == NLI_LABELS


def test_paws_like_split_has_the_papers_duplicate_share():
    frame, labels = generate("paraphrase", "paws", 4000, seed=0)
    assert labels == PARAPHRASE_LABELS
    assert abs((frame.label == 1).mean() - 0.313) < 0.03


def test_symmetric_set_pairs_each_claim_with_both_labels():
    frame, labels = generate("fact", "symmetric", 400, seed=0)
    assert labels == ["SUPPORTS", "REFUTES"]
    per_claim = frame.groupby(frame.index // 2)
    assert (per_claim.text_b.nunique() == 1).all()
    assert (per_claim.label.apply(sorted).apply(tuple) == (0, 1)).all()
    # the claim-only cue ('not') is uninformative here
    negated = frame.text_b.str.contains(" not ")
    assert frame[negated].label.mean() == pytest.approx(0.5)


def test_fact_training_cue_predicts_refutes():
    frame, labels = generate("fact", "train", 3000, seed=0, rho=0.9)
    assert labels == FACT_LABELS
    negated = frame.text_b.str.contains(" not ")
    assert (frame[negated].label == labels.index("REFUTES")).mean() > 0.75
    assert (frame[~negated].label == labels.index("REFUTES")).mean() < 0.1


@pytest.mark.parametrize("kwargs,message", [
    ({"generator": "nope", "split": "train", "n": 5}, "unknown"),
    ({"generator": "nli", "split": "paws", "n": 5}, "no split"),
    ({"generator": "nli", "split": "train", "n": 5, "rho": 1.5}, "rho"),
    ({"generator": "nli", "split": "train", "n": 0}, "'n'"),
])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate(**kwargs)
