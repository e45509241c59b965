"""A miniature Hugging Face Hub cache: the repos the paper configs read, a few dozen rows each, written in the
layout ``huggingface_hub`` itself writes and reads offline, so that the real loading calls run on it.

Layout (huggingface_hub's cache, ``<cache>/<type>s--<org>--<name>/``)::

    datasets--nyu-mll--glue/refs/main                            the commit sha of the branch
    datasets--nyu-mll--glue/blobs/<sha256>                       the file contents
    datasets--nyu-mll--glue/snapshots/<sha>/mnli/train-00000-of-00001.parquet -> ../../../blobs/<sha256>
    datasets--jhu-cogsci--hans/refs/refs/convert/parquet         a ref that is not a branch keeps its full name
    datasets--jhu-cogsci--hans/snapshots/<sha>/plain_text/validation/0000.parquet
    models--bert-base-uncased/snapshots/<sha>/{config.json,vocab.txt,tokenizer_config.json,model.safetensors}

Tables keep the Hub's columns and features (ClassLabel names, StereoSet's nested candidates, MNIST's PNG image
structs), written by ``datasets`` so that the parquet files carry the same feature metadata as the Hub's. Texts
come from a small vocabulary holding the negation words of paper A's MNLI subset and paper B's gender and
stereotype words. Models are a tiny BERT (hidden 32, 2 layers, 2 heads) with masked-LM weights and a WordPiece
vocabulary of every fixture word, saved under each model id.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

GLUE = "nyu-mll/glue"
HANS = "jhu-cogsci/hans"
PAWS = "google-research-datasets/paws"
STEREOSET = "McGill-NLP/stereoset"
MNIST = "ylecun/mnist"
MODELS = ("bert-base-uncased", "google/bert_uncased_L-2_H-128_A-2")
PARQUET_BRANCH = "refs/convert/parquet"

# config -> (text columns, label names, splits), as nyu-mll/glue stores them (every config also has `idx`)
GLUE_CONFIGS = {
    "mnli": (("premise", "hypothesis"), ("entailment", "neutral", "contradiction"), ("train", "validation_matched")),
    "qqp": (("question1", "question2"), ("not_duplicate", "duplicate"), ("train", "validation")),
    "cola": (("sentence",), ("unacceptable", "acceptable"), ("train", "validation")),
    "sst2": (("sentence",), ("negative", "positive"), ("train", "validation")),
    "mrpc": (("sentence1", "sentence2"), ("not_equivalent", "equivalent"), ("train", "validation")),
    "qnli": (("question", "sentence"), ("entailment", "not_entailment"), ("train", "validation")),
    "rte": (("sentence1", "sentence2"), ("entailment", "not_entailment"), ("train", "validation")),
    "wnli": (("sentence1", "sentence2"), ("not_entailment", "entailment"), ("train", "validation")),
}
HANS_HEURISTICS = {"lexical_overlap": ("ln_subject/object_swap", "le_relative_clause"),
                   "subsequence": ("sn_PP_on_subject", "se_adjective"),
                   "constituent": ("cn_embedded_under_if", "ce_adverb")}
STEREOSET_LABELS = ("anti-stereotype", "stereotype", "unrelated")
STEREOSET_ITEM_LABELS = ("anti-stereotype", "stereotype", "unrelated", "related")
NEGATIONS = ("not", "no", "never", "nothing", "nobody")
NOUNS = ("doctor", "lawyer", "teacher", "nurse", "engineer", "secretary", "manager", "artist", "farmer", "banker")
MALE = ("he", "man", "father", "son", "king", "brother", "husband", "boy")
FEMALE = ("she", "woman", "mother", "daughter", "queen", "sister", "wife", "girl")
VERBS = ("saw", "helped", "called", "met", "paid", "thanked", "visited", "praised")
ADJECTIVES = ("good", "strong", "kind", "smart", "quiet", "busy", "happy", "tired")
OTHER = ("the", "a", "is", "was", "in", "city", "today", "and", "who", "what", "did", "why", "does", "very",
         "house", "book", "car", "likes", "reads", "sings", ".", "?", ",")


def _rng_words(rng: random.Random) -> dict[str, str]:
    return {"n1": rng.choice(NOUNS), "n2": rng.choice(NOUNS), "m": rng.choice(MALE), "f": rng.choice(FEMALE),
            "v": rng.choice(VERBS), "a": rng.choice(ADJECTIVES), "neg": rng.choice(NEGATIONS)}


def _sentence(rng: random.Random, i: int, negate: bool = False) -> str:
    w = _rng_words(rng)
    gender = w["m"] if i % 2 == 0 else w["f"]
    if negate:
        return f"the {w['n1']} did {w['neg']} see {gender} ." if w["neg"] == "not" else \
            f"{w['neg']} {w['n1']} {w['v']} the {gender} ."
    return f"the {w['n1']} {w['v']} the {gender} who was {w['a']} ."


# ------------------------------------------------------------------------------------------------ tables
def _glue_rows(config: str, split: str, rows: int, rng: random.Random) -> tuple[dict, object]:
    import datasets

    texts, labels, _ = GLUE_CONFIGS[config]
    data: dict[str, list] = {column: [] for column in texts}
    data["label"], data["idx"] = [], []
    for i in range(rows):
        label = i % len(labels)
        for k, column in enumerate(texts):
            # MNLI's hypotheses: every other one negated, so that gold-entailment rows with a negation exist
            negate = config == "mnli" and k == 1 and i % 2 == 0
            text = _sentence(rng, i + k, negate)
            if config == "mnli" and k == 1 and label == 0:
                # an entailment's hypothesis repeats its premise's words (MNLI's lexical-overlap shortcut, which
                # paper A's overlap bias model and the FFW overlap attribute need in both of their classes)
                premise = data[texts[0]][-1].split(" who was ")[0].split()
                text = " ".join(premise[:2] + (["did", "not"] if negate else []) + premise[2:]) + " ."
            data[column].append(text.replace(" .", " ?") if column.startswith("question") else text)
        data["label"].append(label)
        data["idx"].append(i)
    features = {column: datasets.Value("string") for column in texts}
    features |= {"label": datasets.ClassLabel(names=list(labels)), "idx": datasets.Value("int32")}
    return data, datasets.Features(features)


def _hans_rows(rows: int, rng: random.Random) -> tuple[dict, object]:
    import datasets

    columns = ("premise", "hypothesis", "label", "parse_premise", "parse_hypothesis", "binary_parse_premise",
               "binary_parse_hypothesis", "heuristic", "subcase", "template")
    data: dict[str, list] = {c: [] for c in columns}
    heuristics = list(HANS_HEURISTICS)
    for i in range(rows):
        w = _rng_words(rng)
        heuristic = heuristics[i % 3]
        premise = f"the {w['n1']} {w['v']} the {w['n2']} ."
        hypothesis = f"the {w['n2']} {w['v']} the {w['n1']} ." if i % 2 else premise
        for column, value in (("premise", premise), ("hypothesis", hypothesis), ("label", (i // 3) % 2),
                              ("heuristic", heuristic), ("subcase", HANS_HEURISTICS[heuristic][(i // 3) % 2]),
                              ("template", f"temp{i % 4 + 1}")):
            data[column].append(value)
        for column in ("parse_premise", "parse_hypothesis", "binary_parse_premise", "binary_parse_hypothesis"):
            text = premise if "premise" in column else hypothesis
            data[column].append("( " + " ".join(f"( {t} )" for t in text.split()) + " )")
    features = {c: datasets.Value("string") for c in columns}
    features["label"] = datasets.ClassLabel(names=["entailment", "non-entailment"])
    return data, datasets.Features(features)


def _paws_rows(rows: int, rng: random.Random) -> tuple[dict, object]:
    import datasets

    data: dict[str, list] = {"id": [], "sentence1": [], "sentence2": [], "label": []}
    for i in range(rows):
        w = _rng_words(rng)
        first = f"the {w['n1']} {w['v']} the {w['n2']} in the city ."
        second = first if i % 2 else f"the {w['n2']} {w['v']} the {w['n1']} in the city ."
        data["id"].append(i + 1)
        data["sentence1"].append(first)
        data["sentence2"].append(second)
        data["label"].append(i % 2)
    features = datasets.Features({"id": datasets.Value("int32"), "sentence1": datasets.Value("string"),
                                  "sentence2": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["0", "1"])})
    return data, features


def _stereoset_rows(config: str, rows: int, rng: random.Random) -> tuple[dict, object]:
    """McGill-NLP/stereoset's columns: id, target, bias_type, context and the candidates as a Sequence of dicts
    (stored as a struct of lists: sentence, id, labels {label, human_id}, gold_label)."""
    import datasets

    data: dict[str, list] = {"id": [], "target": [], "bias_type": [], "context": [], "sentences": []}
    bias_types = ("gender", "gender", "profession", "race")
    for i in range(rows):
        w = _rng_words(rng)
        target = w["m"] if i % 2 == 0 else w["f"]
        if config == "intrasentence":
            context = f"the {target} is BLANK ."
            texts = [f"the {target} is {word} ." for word in ("strong", "kind", "house")]
        else:
            context = f"the {target} {w['v']} the {w['n1']} ."
            texts = [f"{'he' if i % 2 == 0 else 'she'} was {word} ." for word in ("kind", "strong", "book")]
        order = [(i + k) % 3 for k in range(3)]   # the gold labels in varying order, as the Hub's rows have them
        ident = hashlib.md5(f"{config}{i}".encode()).hexdigest()
        data["id"].append(ident)
        data["target"].append(target)
        data["bias_type"].append(bias_types[i % len(bias_types)])
        data["context"].append(context)
        data["sentences"].append({
            "sentence": [texts[k] for k in order],
            "id": [f"{ident}-{k}" for k in order],
            "labels": [{"label": [k, k, 3], "human_id": ["h1", "h2", "h3"]} for k in order],
            "gold_label": order,
        })
    features = datasets.Features({
        "id": datasets.Value("string"), "target": datasets.Value("string"),
        "bias_type": datasets.Value("string"), "context": datasets.Value("string"),
        "sentences": datasets.Sequence({
            "sentence": datasets.Value("string"), "id": datasets.Value("string"),
            "labels": datasets.Sequence({"label": datasets.ClassLabel(names=list(STEREOSET_ITEM_LABELS)),
                                         "human_id": datasets.Value("string")}),
            "gold_label": datasets.ClassLabel(names=list(STEREOSET_LABELS)),
        }),
    })
    return data, features


def _mnist_rows(rows: int, rng: random.Random) -> tuple[dict, object]:
    """ylecun/mnist: ``image`` (28x28 grey PNG bytes in an Image struct) and ``label`` (ClassLabel '0'..'9')."""
    import datasets
    import numpy as np
    from PIL import Image

    data: dict[str, list] = {"image": [], "label": []}
    for i in range(rows):
        digit = i % 10
        pixels = np.zeros((28, 28), dtype=np.uint8)
        pixels[4 + digit:10 + digit, 6:22] = 255
        pixels[rng.randrange(28), rng.randrange(28)] = 128
        buffer = io.BytesIO()
        Image.fromarray(pixels, mode="L").save(buffer, format="PNG")
        data["image"].append({"bytes": buffer.getvalue(), "path": None})
        data["label"].append(digit)
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=[str(d) for d in range(10)])})
    return data, features


def _parquet_bytes(data: dict, features) -> bytes:
    import datasets
    import pyarrow.parquet as pq

    # the Arrow table of a Dataset carries the features in its schema metadata ("huggingface"), as the Hub's files do
    table = datasets.Dataset.from_dict(data, features=features).data.table
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def dataset_files(repo_id: str, rows: int, seed: int) -> tuple[str, dict[str, bytes]]:
    """``(revision, {path in the repo: contents})`` of one dataset repo in its Hub layout."""
    rng = random.Random(f"{seed}:{repo_id}")
    shard = "-00000-of-00001.parquet"
    if repo_id == GLUE:
        return "main", {f"{config}/{split}{shard}": _parquet_bytes(*_glue_rows(config, split, rows, rng))
                        for config, (_, _, splits) in GLUE_CONFIGS.items() for split in splits}
    if repo_id == HANS:
        return PARQUET_BRANCH, {f"plain_text/{split}/0000.parquet": _parquet_bytes(*_hans_rows(rows, rng))
                                for split in ("train", "validation")}
    if repo_id == PAWS:
        return "main", {f"labeled_final/{split}{shard}": _parquet_bytes(*_paws_rows(rows, rng))
                        for split in ("train", "test")}
    if repo_id == STEREOSET:
        return "main", {f"{config}/validation{shard}": _parquet_bytes(*_stereoset_rows(config, rows, rng))
                        for config in ("intrasentence", "intersentence")}
    if repo_id == MNIST:
        return "main", {f"mnist/{split}{shard}": _parquet_bytes(*_mnist_rows(rows, rng))
                        for split in ("train", "test")}
    raise ValueError(f"write_hub_cache: field 'datasets' has value {repo_id!r}; known: "
                     f"{[GLUE, HANS, PAWS, STEREOSET, MNIST]}")


# ------------------------------------------------------------------------------------------------ models
def fixture_words(extra_lists: Iterable[Path] = ()) -> list[str]:
    """Every word the fixture texts use, and those of the given word lists (paper B's gender lists)."""
    words = set(NEGATIONS + NOUNS + MALE + FEMALE + VERBS + ADJECTIVES + OTHER)
    words |= {"see", "blank", "strong", "kind", "house", "book", "temp1", "temp2", "temp3", "temp4"}
    for path in extra_lists:
        words |= {w.strip().lower() for w in Path(path).read_text(encoding="utf-8").splitlines() if w.strip()}
    return sorted(words)


def model_files(repo_id: str, words: list[str], seed: int) -> dict[str, bytes]:
    """A tiny BERT (bert-base's config class: hidden 128, 2 heads of 64 — paper B's head blocks are 64 wide —
    intermediate 512; 5 layers under bert-base-uncased's id, the fewest paper B's "intermediate" layer set (layers
    1-4) takes, 2 under BERT-tiny's, as it has) with a WordPiece vocab, its weights
    those of ``BertForPreTraining`` as bert-base-uncased ships them: encoder, pooler, masked-LM and NSP heads."""
    import torch
    from transformers import BertConfig, BertForPreTraining

    specials = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = sorted({f"##{c}" for w in words for c in w if c.isalnum()} | {c for w in words for c in w})
    vocab = specials + [w for w in dict.fromkeys(words + pieces) if w not in specials]
    layers = 5 if repo_id == "bert-base-uncased" else 2
    config = BertConfig(vocab_size=len(vocab), hidden_size=128, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=512, max_position_embeddings=128, pad_token_id=0,
                        architectures=["BertForMaskedLM"])
    torch.manual_seed(seed)
    model = BertForPreTraining(config)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        out = {name: (Path(tmp) / name).read_bytes() for name in ("config.json", "model.safetensors")}
    out["vocab.txt"] = ("\n".join(vocab) + "\n").encode()
    out["tokenizer_config.json"] = json.dumps({"do_lower_case": True, "model_max_length": 512,
                                               "tokenizer_class": "BertTokenizer"}).encode()
    return out


# ------------------------------------------------------------------------------------------------ the cache
def _git_blob_sha1(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def write_repo(cache_dir: Path, repo_id: str, repo_type: str, revision: str, files: dict[str, bytes]) -> dict:
    """One repo in huggingface_hub's cache layout: blobs named by their sha256 (LFS files: parquet, safetensors)
    or git blob sha1 (the rest), the snapshot's files as relative symlinks to them (copies where the file system
    has no symlinks), ``refs/<revision>`` holding the commit sha (a 40-hex digest of the contents)."""
    storage = Path(cache_dir) / f"{repo_type}s--{repo_id.replace('/', '--')}"
    digest = hashlib.sha1(repo_id.encode() + revision.encode())
    for name in sorted(files):
        digest.update(name.encode() + hashlib.sha256(files[name]).digest())
    commit = digest.hexdigest()
    snapshot = storage / "snapshots" / commit
    for name, content in sorted(files.items()):
        lfs = name.endswith((".parquet", ".safetensors", ".bin"))
        blob = storage / "blobs" / (hashlib.sha256(content).hexdigest() if lfs else _git_blob_sha1(content))
        blob.parent.mkdir(parents=True, exist_ok=True)
        if not blob.is_file():
            blob.write_bytes(content)
        target = snapshot / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        try:
            target.symlink_to(os.path.relpath(blob, target.parent))
        except OSError:
            shutil.copyfile(blob, target)
    ref = storage / "refs" / revision
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(commit)   # huggingface_hub writes the sha with no newline
    return {"type": repo_type, "revision": revision, "commit": commit, "folder": str(storage),
            "files": sorted(files)}


def write_hub_cache(cache_dir: Path, spec: dict | None = None, rows: int = 24, seed: int = 0) -> dict:
    """Write the miniature Hub cache under ``cache_dir`` (what ``HF_HUB_CACHE`` names) and return
    ``{repo id: {type, revision, commit, folder, files}}``.

    ``spec``: ``{"datasets": [repo ids], "models": [repo ids], "word_lists": [files]}``, each optional: by default
    every dataset (GLUE, HANS, PAWS, StereoSet, MNIST) and both models, the vocabulary holding the fixture words
    and those of ``data/gender/{male,female,stereotype}.txt`` when they are found beside this package's project.
    ``rows``: rows per split (every label present when ``rows`` is at least the number of labels)."""
    spec = dict(spec or {})
    if rows < 10:
        raise ValueError(f"write_hub_cache: field 'rows' has value {rows}; at least 10 (every MNIST digit)")
    cache_dir = Path(cache_dir)
    written = {}
    for repo_id in spec.get("datasets", (GLUE, HANS, PAWS, STEREOSET, MNIST)):
        revision, files = dataset_files(repo_id, rows, seed)
        written[repo_id] = write_repo(cache_dir, repo_id, "dataset", revision, files)
    models = spec.get("models", MODELS)
    if models:
        lists = spec.get("word_lists")
        if lists is None:
            project = Path(__file__).resolve().parents[3] / "data" / "gender"
            lists = [project / f"{n}.txt" for n in ("male", "female", "stereotype")
                     if (project / f"{n}.txt").is_file()]
        words = fixture_words(lists)
        for repo_id in models:
            written[repo_id] = write_repo(cache_dir, repo_id, "model", "main", model_files(repo_id, words, seed))
    return written
