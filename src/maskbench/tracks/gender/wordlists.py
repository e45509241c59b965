"""Kaneko & Bollegala's attribute and stereotype word lists (paper B's own lists; the project ships them in
data/gender/, with their licence): one word per line, read and checked before any model work.

A list must exist and hold at least one word; a repeated word counts once (Kaneko & Bollegala's male and female
lists repeat 15 and 20 of their 222 lines). Against a tokenizer, every word must map to at least one token that is
not the unknown token (a word that is all [UNK] says nothing about the model's bias)."""

from __future__ import annotations

from pathlib import Path


class WordListError(ValueError):
    """A word list that cannot be used, named by its file."""


def read_word_list(path: str | Path) -> list[str]:
    """The distinct words of a list file, in file order (blank lines and surrounding spaces ignored)."""
    path = Path(path)
    if not path.is_file():
        raise WordListError(f"{path}: the word list does not exist")
    words = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not words:
        raise WordListError(f"{path}: the word list is empty")
    return list(dict.fromkeys(words))


def check_known_to(words: list[str], tokenizer, path: str | Path) -> None:
    """Refuse a word the tokenizer can only map to its unknown token, naming the file and the word."""
    unknown = tokenizer.unk_token_id
    for word in words:
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if not ids or all(i == unknown for i in ids):
            raise WordListError(f"{path}: word {word!r} maps to the unknown token only ({tokenizer.unk_token}) "
                                "with this model's tokenizer")
