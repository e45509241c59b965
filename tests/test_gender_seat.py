"""The gender track's first pieces: SEAT effect sizes and permutation p-values by hand, the shipped SEAT files and
word lists, and bad word lists or SEAT files stopping with a message that names the file."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from maskbench.tracks.gender.seat import SeatFileError, associations, effect_size, p_value, read_seat
from maskbench.tracks.gender.wordlists import WordListError, check_known_to, read_word_list

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data/gender"

# a hand-made 2 x 2 test in the plane: A along x, B along y
A, B = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
X = np.array([[1.0, 0.0], [1.0, 1.0]])   # s = cos(x, a) - cos(x, b): 1 and 0
Y = np.array([[0.0, 1.0], [2.0, 2.0]])   # -1 and 0


def test_associations_and_effect_size_by_hand():
    assert associations(np.vstack([X, Y]), A, B) == pytest.approx([1.0, 0.0, -1.0, 0.0])
    # (mean(1, 0) - mean(-1, 0)) / std(1, 0, -1, 0; ddof 1) = 1 / sqrt(2 / 3)
    assert effect_size(X, Y, A, B) == pytest.approx(1 / math.sqrt(2 / 3))
    assert effect_size(Y, X, A, B) == pytest.approx(-1 / math.sqrt(2 / 3))


def test_exact_p_value_by_hand():
    """The 6 ways to pick 2 of the associations (1, 0, -1, 0) sum to 1, 0, 1, -1, 0, -1; two reach the observed 1."""
    p, exact = p_value(X, Y, A, B)
    assert exact and p == pytest.approx(2 / 6)


def test_identical_attribute_sets_give_no_effect_and_p_one():
    p, exact = p_value(X, Y, A, A)
    assert effect_size(X, Y, A, A) == 0.0 and exact and p == pytest.approx(1.0)


def test_a_sampled_p_value_is_seeded_and_close_to_the_exact_one():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(7, 5)) + 0.3, rng.normal(size=(7, 5))  # C(14, 7) = 3432 partitions
    a, b = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    exact, is_exact = p_value(x, y, a, b)
    sampled, is_sampled_exact = p_value(x, y, a, b, n_samples=2000, seed=5)
    assert is_exact and not is_sampled_exact
    assert sampled == p_value(x, y, a, b, n_samples=2000, seed=5)[0]
    assert abs(sampled - exact) < 0.05


@pytest.mark.parametrize("name", ["sent-weat6", "sent-weat6b", "sent-weat7", "sent-weat7b", "sent-weat8",
                                  "sent-weat8b", "weat6", "weat7", "weat8"])
def test_the_shipped_seat_tests_read(name):
    test = read_seat(DATA / "seat" / f"{name}.jsonl")
    assert test.name == name and len(test.targ1.examples) == len(test.targ2.examples) > 0
    assert test.attr1.examples and test.attr2.examples


def test_the_shipped_word_lists_read():
    """222 / 222 / 168 lines; Kaneko & Bollegala's male and female lists repeat 15 and 20 of their lines (each word
    is kept once)."""
    male, female, stereotype = (read_word_list(DATA / f"{n}.txt") for n in ("male", "female", "stereotype"))
    assert (len(male), len(female), len(stereotype)) == (207, 202, 168)
    assert len(set(male)) == len(male) and not set(male) & set(female)


def test_a_seat_file_without_a_key_names_the_file_and_the_key(tmp_path):
    data = json.loads((DATA / "seat/sent-weat6.jsonl").read_text())
    del data["attr2"]
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(data))
    with pytest.raises(SeatFileError, match=f"{path}: key 'attr2' is missing"):
        read_seat(path)


def test_a_bad_word_list_names_the_file(tmp_path):
    path = tmp_path / "male.txt"
    path.write_text("\n  \n")
    with pytest.raises(WordListError, match=f"{path}: the word list is empty"):
        read_word_list(path)
    with pytest.raises(WordListError, match=f"{tmp_path / 'none.txt'}: the word list does not exist"):
        read_word_list(tmp_path / "none.txt")
    path.write_text("he\nhim\n he \n")
    assert read_word_list(path) == ["he", "him"]  # a repeated word counts once


def test_a_word_the_tokenizer_only_knows_as_unknown_names_the_file(tmp_path):
    from maskbench.text.models import data_vocab_tokenizer

    tokenizer = data_vocab_tokenizer(["he she him"], tmp_path / "tokenizer")
    check_known_to(["he", "she"], tokenizer, "male.txt")
    with pytest.raises(WordListError, match=r"male\.txt: word 'zyx' maps to the unknown token only \(\[UNK\]\)"):
        check_known_to(["he", "zyx"], tokenizer, "male.txt")
