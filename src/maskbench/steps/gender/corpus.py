"""Entry point: the gender track's corpus — sentences holding the attribute or stereotype words, cut into male /
female / stereotype sets with a held-out part each (paper B's cut, ``maskbench.tracks.gender.corpus``).

    python -m maskbench.steps gender.corpus --source generate:3000 --male data/gender/male.txt \
        --female data/gender/female.txt --stereotype data/gender/stereotype.txt --heldout 300 --seed 0 \
        --out results/gender/data/corpus.parquet

``--source``: ``generate:<sentences per category>`` (offline, templates over the real word lists), a local text
file (one sentence per line, plain or .gz), an http(s) URL downloaded first beside ``--out`` (paper B: News
Commentary v15), or ``dataset``: the texts of a sentence-pair dataset (``--dataset-spec``, a registry entry read
like any dataset, its checksum, part and sample included; ``--local-file`` its file), every distinct text_a and
text_b a line, in the file's order (MultiNLI: its premises and hypotheses). The word lists are checked before the
corpus is read.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.corpus import corpus_frame, cut_corpus, generate_sentences, read_text_lines
from maskbench.tracks.gender.wordlists import read_word_list

log = logging.getLogger("maskbench.steps.gender.corpus")


@dataclass
class GenderCorpusArgs:
    source: str = field(metadata={"help": "generate:<n per category> | <text file> | <http(s) URL>"})
    male: Path = field(metadata={"help": "male attribute words, one per line"})
    female: Path = field(metadata={"help": "female attribute words, one per line"})
    stereotype: Path = field(metadata={"help": "stereotype target words, one per line"})
    out: Path = field(metadata={"help": "corpus table to write (.parquet)"})
    heldout: int = field(default=1000, metadata={"help": "held-out sentences per category (paper B 1,000)"})
    seed: int = field(default=0, metadata={"help": "fixes the held-out choice (and the generated sentences)"})
    mixed: int = field(default=0, metadata={"help": "generate: also this many two-gender sentences (dropped)"})
    dataset_spec: str = field(default="", metadata={"help": "dataset: the registry entry (JSON) whose texts are the lines"})
    local_file: Path | None = field(default=None, metadata={"help": "dataset: its local file as the workflow resolved it"})


def dataset_lines(spec: dict, local_file: Path | None) -> list[str]:
    """Every distinct text of a pair dataset (text_a, then text_b, in row order), once."""
    from maskbench.data.registry import load_dataset  # pandas and the registry only for this source

    frame, _ = load_dataset("gender corpus", spec, local_path=local_file)
    texts = [t for pair in zip(frame["text_a"], frame["text_b"], strict=True) for t in pair if t]
    return list(dict.fromkeys(texts))


def corpus_lines(source: str, out: Path, lists: tuple[list[str], list[str], list[str]], seed: int,
                 mixed: int, dataset_spec: str = "", local_file: Path | None = None) -> list[str]:
    if source == "dataset":
        if not dataset_spec:
            raise ValueError("--source dataset needs --dataset-spec (the registry entry of gender.corpus.dataset)")
        return dataset_lines(json.loads(dataset_spec), local_file)
    if source.startswith("generate:"):
        count = source.split(":", 1)[1]
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"--source {source!r}: generate:<n> needs a positive number of sentences")
        return generate_sentences(*lists, int(count), seed, mixed)
    if source.startswith(("http://", "https://")):
        target = out.with_name(out.name + ".download" + (".gz" if source.endswith(".gz") else ""))
        if not target.is_file():
            log.info("downloading %s", source)
            with runtime.atomic_path(target) as tmp:
                urllib.request.urlretrieve(source, tmp)
        return read_text_lines(target)
    return read_text_lines(source)


@step_main(GenderCorpusArgs)
def main(args: GenderCorpusArgs) -> int:
    lists = tuple(read_word_list(p) for p in (args.male, args.female, args.stereotype))
    lines = corpus_lines(args.source, args.out, lists, args.seed, args.mixed, args.dataset_spec, args.local_file)
    cut = cut_corpus(lines, *lists, heldout=args.heldout, seed=args.seed, where=args.source)
    frame = corpus_frame(cut)
    runtime.atomic_write_parquet(frame, args.out)
    counts = frame.groupby(["category", "split"]).size().to_dict()
    log.info("wrote %s from %d lines: %s", args.out, len(lines), counts)
    return 0


if __name__ == "__main__":
    run_step(main)
