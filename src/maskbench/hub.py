"""The Hugging Face Hub cache: which files of a dataset split or a model maskbench needs, and where they are.

Compute nodes may have no internet: ``python -m maskbench.steps fetch`` downloads everything a config reads into
the standard cache (``$HF_HUB_CACHE``, by default ``~/.cache/huggingface/hub``) on the login node, and jobs run
with ``HF_HUB_OFFLINE=1``. Both go through the functions here, so the fetch downloads exactly what a job reads:

* a dataset split is the parquet files of one config and split in the repo snapshot at ``revision``, in one of
  the Hub's parquet layouts: ``<config>/<split>-*.parquet`` (a repo converted to parquet, e.g. nyu-mll/glue,
  google-research-datasets/paws, McGill-NLP/stereoset at ``main``; ylecun/mnist as config ``mnist``),
  ``<config>/<split>/*.parquet`` (the parquet conversion branch ``refs/convert/parquet``, e.g. jhu-cogsci/hans
  ``plain_text/validation/0000.parquet``) or ``data/<split>-*.parquet`` (a repo's ``default`` config);
* a model is its config, tokenizer files and weights (safetensors; ``pytorch_model.bin`` only where the repo has
  no safetensors).

The environment is read at call time (``HF_HUB_OFFLINE``, ``HF_HUB_CACHE``, ``HF_HOME``), not when
huggingface_hub was imported, so a job and a test see the values they set.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from maskbench.errors import DataError

FETCH_HINT = "run `python -m maskbench.steps fetch --configfile <config>` on a machine with internet (docs/cluster.md)"
MODEL_FILES = ["config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "added_tokens.json", "merges.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model"]
MODEL_WEIGHTS = ["model.safetensors", "model.safetensors.index.json", "model-*-of-*.safetensors"]
MODEL_WEIGHTS_FALLBACK = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*-of-*.bin"]
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
_TRUE = {"1", "on", "yes", "true"}


class HubError(DataError):
    """A Hub repo, revision or file that is not where it should be (one line: repo, field, value, what to do)."""


def hub_offline() -> bool:
    """Whether the Hub must not be contacted: $HF_HUB_OFFLINE (or $TRANSFORMERS_OFFLINE) is set true."""
    from huggingface_hub import constants

    env = (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "").strip().lower()
    return env in _TRUE or bool(constants.HF_HUB_OFFLINE)


def hub_cache_dir() -> str:
    """The Hub cache folder as the environment names it now ($HF_HUB_CACHE, else $HF_HOME/hub, else the default)."""
    from huggingface_hub import constants

    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    return constants.HF_HUB_CACHE


def is_hub_id(path: str) -> bool:
    """A model path that names a Hub repo (``bert-base-uncased``, ``google/bert_uncased_L-2_H-128_A-2``), not an
    existing folder, a ``package:`` model or an absolute/relative file path."""
    return (":" not in path and not os.path.exists(path) and not path.startswith((".", "~"))
            and bool(_REPO_ID.match(path)))


def dataset_patterns(config: str | None, split: str) -> list[str]:
    """The files of one config and split in the Hub's parquet layouts (fnmatch patterns: ``*`` crosses ``/``)."""
    top = config or "*"
    patterns = [f"{top}/{split}-*.parquet", f"{top}/{split}/*.parquet"]
    if config in (None, "default"):
        patterns.append(f"data/{split}-*.parquet")
    return patterns


def _matching(snapshot: Path, patterns: list[str]) -> list[Path]:
    found = []
    for path in sorted(p for p in snapshot.rglob("*.parquet")):
        relative = path.relative_to(snapshot).as_posix()
        if any(fnmatch.fnmatchcase(relative, pattern) for pattern in patterns):
            found.append(path)
    return found


def _snapshot(repo_id: str, repo_type: str, revision: str, allow_patterns: list[str], local_files_only: bool,
              cache_dir: str | None) -> Path:
    from huggingface_hub import snapshot_download

    kind = "hf:" if repo_type == "dataset" else "model "
    try:
        return Path(snapshot_download(repo_id, repo_type=repo_type, revision=revision, allow_patterns=allow_patterns,
                                      cache_dir=cache_dir or hub_cache_dir(), local_files_only=local_files_only))
    except Exception as err:
        reason = (str(err).splitlines() or [""])[0].split(". ")[0][:160]
        where = "not in the Hub cache" if local_files_only else "could not be downloaded into the Hub cache"
        raise HubError(f"{kind}{repo_id}: field 'revision' has value {revision!r} that is {where} "
                       f"{cache_dir or hub_cache_dir()} ({type(err).__name__}: {reason}); {FETCH_HINT}") from err


def dataset_split_files(hub_id: str, config: str | None, split: str, revision: str | None = None, *,
                        local_files_only: bool | None = None, cache_dir: str | None = None) -> tuple[Path, list[Path]]:
    """``(snapshot folder, parquet files)`` of one split of a Hub dataset, downloaded unless offline (or
    ``local_files_only``); a split with no file, or found in several configs when ``config`` is None, is a
    HubError naming the repo, config and split."""
    revision = revision or "main"
    offline = hub_offline() if local_files_only is None else local_files_only
    patterns = dataset_patterns(config, split)
    snapshot = _snapshot(hub_id, "dataset", revision, patterns, offline, cache_dir)
    files = _matching(snapshot, patterns)
    if not files:
        raise HubError(f"hf:{hub_id}: field 'split' has value {split!r} (config {config!r}, revision {revision!r}) "
                       f"with no parquet file in {snapshot} matching {patterns}; {FETCH_HINT}")
    tops = sorted({f.relative_to(snapshot).parts[0] for f in files})
    if config is None and len(tops) > 1:
        raise HubError(f"hf:{hub_id}: field 'config' is not set and split {split!r} is in several configs {tops}; "
                       f"set config to one of them")
    return snapshot, files


def model_patterns(repo_files: list[str] | None = None) -> list[str]:
    """The files of a model repo a job reads: config, tokenizer, and the safetensors weights (the PyTorch
    pickle only where ``repo_files`` shows no safetensors)."""
    patterns = MODEL_FILES + MODEL_WEIGHTS
    if repo_files is not None and not any(f.endswith(".safetensors") for f in repo_files):
        patterns += MODEL_WEIGHTS_FALLBACK
    return patterns


def model_snapshot(repo_id: str, revision: str | None = None, *, local_files_only: bool | None = None,
                   cache_dir: str | None = None, allow_patterns: list[str] | None = None) -> Path:
    """The snapshot folder of a Hub model holding its config, tokenizer and weights (downloaded unless offline)."""
    revision = revision or "main"
    offline = hub_offline() if local_files_only is None else local_files_only
    snapshot = _snapshot(repo_id, "model", revision, allow_patterns or model_patterns(), offline, cache_dir)
    if not (snapshot / "config.json").is_file():
        raise HubError(f"model {repo_id}: field 'path' names a Hub repo whose snapshot {snapshot} has no config.json; "
                       f"{FETCH_HINT}")
    return snapshot


def download_url(url: str, out: Path) -> str:
    """Download ``url`` (http, https or file) to ``out`` atomically and return the file's sha256; an unreachable
    URL is a HubError naming it and the target."""
    import urllib.request

    from maskbench import runtime

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with runtime.atomic_path(out) as tmp:
            urllib.request.urlretrieve(url, tmp)
    except OSError as err:
        raise HubError(f"{out}: field 'source' has value {url!r} that could not be downloaded "
                       f"({type(err).__name__}: {(str(err).splitlines() or [''])[0][:160]})") from err
    return file_sha256(out)


def file_sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
