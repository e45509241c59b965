"""Entry point: build PAWS-QQP under Python 3 from Quora's question pairs and PAWS's index file.

    python -m maskbench.tools.paws_qqp --qqp quora_duplicate_questions.tsv --paws paws_qqp/train.tsv \\
        --out data/paws_qqp/train.tsv

Google publishes PAWS-QQP only as token indices into QQP's questions; google-research-datasets/paws'
``qqp_generate_data.py`` rebuilds the text but is Python 2 (it calls ``.decode`` on ``str`` and writes bytes,
which a naive port writes as ``b'...'``). This tool writes what that script writes, under Python 3:

- the QQP file (tab-separated, a header row, then id, qid1, qid2, question1, question2, is_duplicate; Quora
  quotes a question holding a tab or a line break with "...") is read with csv's default quoting; every question
  is tokenized with NLTK's ``word_tokenize`` (the paws README tested NLTK 3.2.5), the first row naming a qid wins;
- the PAWS file (a header row, then id, qid1, sentence1, qid2, sentence2, label) gives each sentence as tokens
  joined by "/": an integer is a token of the row's own question (qid1 for sentence1, qid2 for sentence2), an
  item starting with "(" is tokens of other questions, "(qid, index)" pairs joined by ":", glued together without
  a space; the sentence is its tokens joined by single spaces;
- the output is tab-separated with the header id, sentence1, sentence2, label, no quoting, lines ending in
  "\\r\\n" (csv's default, as the original), UTF-8; id and label are copied as they are.

Where the original prints a warning and drops the pair (a qid that QQP lacks, a token index past the question's
tokens), this tool stops with one line naming the PAWS file, its line and the qid or index: a dropped pair would
change the 11,988 / 677 counts silently. Exit status 0 on success, 1 on bad input.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from maskbench.data.paws_qqp import build as build
from maskbench.steps import run_step


@dataclass(frozen=True)
class PawsQqpArgs:
    qqp: Path
    paws: Path
    out: Path


def parse_args(argv=None) -> PawsQqpArgs:
    parser = argparse.ArgumentParser(prog="python -m maskbench.tools.paws_qqp", description=__doc__.splitlines()[0])
    parser.add_argument("--qqp", required=True, type=Path, help="Quora's quora_duplicate_questions.tsv")
    parser.add_argument("--paws", required=True, type=Path,
                        help="a PAWS-QQP index file of paws_qqp.tar.gz (train.tsv or dev_and_test.tsv)")
    parser.add_argument("--out", required=True, type=Path, help="the PAWS-QQP tsv to write")
    ns = parser.parse_args(argv)
    return PawsQqpArgs(qqp=ns.qqp, paws=ns.paws, out=ns.out)


def main(argv=None) -> int:
    args = parse_args(argv)
    n = build(args.qqp, args.paws, args.out)
    print(f"PAWS-QQP: {n} pairs -> {args.out}")
    return 0


if __name__ == "__main__":
    run_step(main)
