"""PAWS-QQP rebuilt under Python 3 from Quora's question pairs and PAWS's index file: what google-research-datasets/
paws' ``qqp_generate_data.py`` writes (its command: `python -m maskbench.tools.paws_qqp`, whose docstring gives the
format and the differences)."""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from maskbench.data.schema import DataError
from maskbench.runtime import atomic_path

Tokenize = Callable[[str], list[str]]
QQP_FIELDS = ("id", "qid1", "qid2", "question1", "question2", "is_duplicate")
PAWS_FIELDS = ("id", "qid1", "sentence1", "qid2", "sentence2", "label")
OUT_FIELDS = ("id", "sentence1", "sentence2", "label")
_PAIR = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def nltk_tokenizer() -> Tokenize:
    """NLTK's word_tokenize, the original's tokenizer; a DataError saying how to install it when it is missing."""
    hint = ("pip install nltk (the paws README tested 3.2.5), then python -m nltk.downloader punkt punkt_tab")
    try:
        import nltk
    except ImportError as err:
        raise DataError(f"PAWS-QQP needs NLTK's word_tokenize, which is not installed: {hint}") from err

    def tokenize(text: str) -> list[str]:
        try:
            return nltk.word_tokenize(text)
        except LookupError as err:
            raise DataError(f"NLTK's word_tokenize lacks its sentence model (punkt): {hint}") from err

    return tokenize


def _rows(path: Path, fields: tuple[str, ...], **options) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of every data row after the header row, blank lines skipped (as csv.DictReader skips
    them); a row with fewer fields than ``fields`` is a DataError naming the file and line."""
    if not path.is_file():
        raise DataError(f"{path}: field 'path' has value {str(path)!r} but no such file exists")
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", **options)
        header = True
        start = 1
        try:
            for row in reader:
                line, start = start, reader.line_num + 1
                if not row:
                    continue
                if header:
                    header = False
                    continue
                if len(row) < len(fields):
                    raise DataError(f"{path}: line {line} has {len(row)} tab-separated fields, expected "
                                    f"{len(fields)} ({', '.join(fields)})")
                yield line, row
        except UnicodeDecodeError as err:
            raise DataError(f"{path}: byte {err.object[err.start:err.start + 1]!r} is not UTF-8 ({err.reason}); "
                            f"the file must be UTF-8 encoded") from err


def _qid(value: str, path: Path, line: int, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise DataError(f"{path}: line {line}, field {field!r} has value {value!r}, not an integer qid") from None


def read_qqp_tokens(path, tokenize: Tokenize) -> dict[int, list[str]]:
    """qid -> the tokens of its question, from Quora's question-pairs tsv; the first row naming a qid wins."""
    path = Path(path)
    tokens: dict[int, list[str]] = {}
    for line, row in _rows(path, QQP_FIELDS):
        for qid_field, text_field in (("qid1", "question1"), ("qid2", "question2")):
            qid = _qid(row[QQP_FIELDS.index(qid_field)], path, line, qid_field)
            if qid not in tokens:
                tokens[qid] = list(tokenize(row[QQP_FIELDS.index(text_field)]))
    return tokens


def build_sentence(indices: str, qid: int, tokens: dict[int, list[str]], where: str) -> str:
    """One PAWS sentence from its index string (see the module's docstring); ``where`` names the file, line and
    field in errors."""

    def token(source: int, index: int) -> str:
        if source not in tokens:
            raise DataError(f"{where}: qid {source} is not in the QQP file (another QQP version?)")
        if index >= len(tokens[source]):
            raise DataError(f"{where}: token index {index} of qid {source}, whose question has "
                            f"{len(tokens[source])} tokens (another QQP version, or an NLTK other than 3.2.5?)")
        return tokens[source][index]

    words = []
    for item in indices.split("/"):
        if item.startswith("("):
            parts = item.split(":")
            pairs = [_PAIR.fullmatch(part.strip()) for part in parts]
            if not all(pairs):
                raise DataError(f"{where}: item {item!r} is not '(qid, index)' pairs joined by ':'")
            words.append("".join(token(int(m.group(1)), int(m.group(2))) for m in pairs))
        elif item.isdigit():
            words.append(token(qid, int(item)))
        else:
            raise DataError(f"{where}: item {item!r} is neither a token index nor '(qid, index)' pairs")
    return " ".join(words)


def build_rows(paws_path, tokens: dict[int, list[str]]) -> list[tuple[str, str, str, str]]:
    """(id, sentence1, sentence2, label) of every PAWS row, in file order."""
    paws_path = Path(paws_path)
    out = []
    # the original reads the PAWS file with csv's default quoting; index strings hold no quotes
    for line, row in _rows(paws_path, PAWS_FIELDS):
        pair_id, qid1, sentence1, qid2, sentence2, label = row[:6]
        first = build_sentence(sentence1, _qid(qid1, paws_path, line, "qid1"), tokens,
                               f"{paws_path}: line {line}, field 'sentence1'")
        second = build_sentence(sentence2, _qid(qid2, paws_path, line, "qid2"), tokens,
                                f"{paws_path}: line {line}, field 'sentence2'")
        out.append((pair_id, first, second, label))
    return out


def write_tsv(rows, out) -> None:
    """The original's output: a header, tab-separated fields unquoted (csv with quotechar None), "\\r\\n" ends."""
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", quotechar=None)
        writer.writerow(OUT_FIELDS)
        writer.writerows(rows)


def build(qqp, paws, out, tokenize: Tokenize | None = None) -> int:
    """Write PAWS-QQP ``out`` from the QQP file and the PAWS index file; return the number of pairs."""
    tokenize = tokenize or nltk_tokenizer()
    tokens = read_qqp_tokens(qqp, tokenize)
    rows = build_rows(paws, tokens)
    write_tsv(rows, out)
    return len(rows)
