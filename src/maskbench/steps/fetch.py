"""Fetch everything a config reads from the network, on a machine with internet (a cluster's login node), so that
every job can run with ``HF_HUB_OFFLINE=1`` (docs/cluster.md, "Offline compute nodes").

    python -m maskbench.steps fetch --configfile configs/paper.yaml [--cache DIR] [--dry-run] [--local-files-only]
        [--lock FILE]

It walks the config — every ``hf:`` dataset of ``datasets:``, paper B's GLUE tasks (``gender.performance.tasks``),
StereoSet (``gender.lm_bias.stereoset``), the MNIST source (``vision.mnist.source``), every model ``path`` that is
a Hub id (``model``, the bias sources' ``model``, ``gender.model`` and any other ``model:`` mapping) and the gender
corpus URL (``gender.corpus.source``) — and downloads each into the standard Hugging Face cache
(``$HF_HUB_CACHE``, or ``--cache``), only the files a job reads (``maskbench.hub``): a dataset's parquet files of
the config and split, a model's config, tokenizer and weights. The corpus goes to the file the ``gender_corpus``
rule reads (``<results>/gender/data/downloads/<name>``). The lock file (default ``<results>/fetch.lock.json``)
records each repo's id, type, requested revision, resolved commit sha and files, and the corpus's URL, file and
sha256. ``--dry-run`` lists what would be fetched and touches nothing; ``--local-files-only`` checks that the
cache already holds everything (no network) and writes the lock from it. Anything missing is one line naming the
repo (or URL), the config key and the value, and exit code 1. The `fetch` rule (rules/fetch.smk) runs it as a
localrule: `snakemake --configfile <config> fetch`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from maskbench import hub
from maskbench.config_files import read_configs
from maskbench.data.schema import DataError
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.workflow_plan import corpus_target

STEREOSET_HUB = "McGill-NLP/stereoset"
MNIST_SPLITS = ("train", "test")


@dataclass
class Item:
    """One thing to fetch: a dataset split, a model or a URL, with the config key(s) that ask for it."""
    kind: str                       # dataset | model | url
    repo: str                       # Hub id, or the URL
    revision: str | None = None
    config: str | None = None
    split: str | None = None
    target: str | None = None       # url: the file written
    keys: list[str] = field(default_factory=list)

    def ident(self) -> tuple:
        return (self.kind, self.repo, self.revision, self.config, self.split, self.target)

    def line(self) -> str:
        if self.kind == "dataset":
            what = f"dataset {self.repo}@{self.revision} config={self.config or '-'} split={self.split}"
            return f"{what}  files {' | '.join(hub.dataset_patterns(self.config, self.split))}"
        if self.kind == "model":
            return f"model   {self.repo}@{self.revision}  files config, tokenizer, weights"
        return f"url     {self.repo} -> {self.target}"


def _hf(source: str) -> str | None:
    return source[3:] if isinstance(source, str) and source.startswith("hf:") else None


def _dataset(items: list[Item], spec: dict, key: str) -> None:
    hub_id = _hf(spec.get("source"))
    if hub_id:
        if not spec.get("split"):
            raise DataError(f"{key}: field 'split' is missing (source {spec['source']!r})")
        items.append(Item("dataset", hub_id, spec.get("revision") or "main", spec.get("config"), spec["split"],
                          keys=[key]))


def _models(items: list[Item], node, key: str) -> None:
    """Every ``model: {path: <Hub id>}`` mapping anywhere in the config (and ``tokenizer:`` beside it)."""
    if isinstance(node, dict):
        for name, value in node.items():
            here = f"{key}.{name}" if key else str(name)
            if name == "model" and isinstance(value, dict):
                for field_name in ("path", "tokenizer"):
                    path = value.get(field_name)
                    if isinstance(path, str) and hub.is_hub_id(path) and value.get("init") != "scratch":
                        items.append(Item("model", path, value.get("revision") or "main",
                                          keys=[f"{here}.{field_name}"]))
            _models(items, value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _models(items, value, f"{key}[{i}]")


def plan(config: dict) -> list[Item]:
    """What the config reads from the network, merged per (kind, repo, revision, config, split) in config order."""
    items: list[Item] = []
    for name, spec in (config.get("datasets") or {}).items():
        _dataset(items, spec, f"datasets.{name}")
    gender = config.get("gender") or {}
    for task, splits in ((gender.get("performance") or {}).get("tasks") or {}).items():
        for split_name in ("train", "dev"):
            if isinstance(splits.get(split_name), dict):
                _dataset(items, splits[split_name], f"gender.performance.tasks.{task}.{split_name}")
    stereoset = (gender.get("lm_bias") or {}).get("stereoset") or {}
    for part in ("intrasentence", "intersentence"):
        source = stereoset.get(part)
        if source == "hub" or _hf(source):
            hub_id = STEREOSET_HUB if source == "hub" else _hf(source)
            items.append(Item("dataset", hub_id, stereoset.get("revision") or "main", part,
                              stereoset.get("split", "validation"), keys=[f"gender.lm_bias.stereoset.{part}"]))
    mnist = (config.get("vision") or {}).get("mnist") or {}
    if _hf(mnist.get("source")):
        # ylecun/mnist's one config is `mnist` (mnist/<split>-*.parquet); a config key names another
        for split in MNIST_SPLITS:
            items.append(Item("dataset", _hf(mnist["source"]), mnist.get("revision") or "main",
                              mnist.get("config"), split, keys=["vision.mnist.source"]))
    _models(items, config, "")
    url = (gender.get("corpus") or {}).get("source")
    if isinstance(url, str) and url.startswith(("http://", "https://", "file://")):
        items.append(Item("url", url, target=corpus_target(config, url), keys=["gender.corpus.source"]))
    merged: dict[tuple, Item] = {}
    for item in items:
        if item.ident() in merged:
            merged[item.ident()].keys += [k for k in item.keys if k not in merged[item.ident()].keys]
        else:
            merged[item.ident()] = item
    return list(merged.values())


def _relative_files(snapshot: Path, files) -> list[str]:
    return sorted(Path(f).relative_to(snapshot).as_posix() for f in files)


def _model_patterns(item: Item, local_files_only: bool) -> list[str]:
    if local_files_only:
        return hub.model_patterns()
    from huggingface_hub import HfApi

    return hub.model_patterns(HfApi().list_repo_files(item.repo, revision=item.revision))


def fetch(items: list[Item], cache: str | None, local_files_only: bool, say=print) -> dict:
    """Fetch (or, with ``local_files_only``, find) every item; return the lock: repos and downloads."""
    repos: dict[tuple, dict] = {}
    downloads = []
    for item in items:
        where = ", ".join(item.keys)
        try:
            if item.kind == "dataset":
                snapshot, files = hub.dataset_split_files(item.repo, item.config, item.split, item.revision,
                                                          local_files_only=local_files_only, cache_dir=cache)
                files = _relative_files(snapshot, files)
            elif item.kind == "model":
                snapshot = hub.model_snapshot(item.repo, item.revision, local_files_only=local_files_only,
                                              cache_dir=cache, allow_patterns=_model_patterns(item,
                                                                                              local_files_only))
                files = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())
                if not any(f.endswith((".safetensors", ".bin")) for f in files):
                    raise hub.HubError(f"model {item.repo}: field 'path' names a Hub repo whose snapshot "
                                       f"{snapshot} has no weights; {hub.FETCH_HINT}")
            else:
                target = Path(item.target)
                if local_files_only:
                    if not target.is_file():
                        raise hub.HubError(f"{target}: field 'source' has value {item.repo!r} that is not "
                                           f"downloaded; {hub.FETCH_HINT}")
                    sha = hub.file_sha256(target)
                else:
                    sha = hub.download_url(item.repo, target)
                downloads.append({"url": item.repo, "file": str(target), "sha256": sha,
                                  "bytes": target.stat().st_size, "keys": item.keys})
                say(f"fetched url     {item.repo} -> {target} (sha256 {sha[:12]}, {target.stat().st_size} bytes)")
                continue
        except DataError as err:
            raise DataError(f"{err} [asked for by {where}]") from err
        repo_type = "dataset" if item.kind == "dataset" else "model"
        entry = repos.setdefault((repo_type, item.repo, item.revision), {
            "repo_id": item.repo, "repo_type": repo_type, "revision": item.revision, "commit": snapshot.name,
            "files": [], "keys": []})
        entry["files"] = sorted(set(entry["files"]) | set(files))
        entry["keys"] += [k for k in item.keys if k not in entry["keys"]]
        say(f"fetched {item.line().split('  files')[0]} @ {snapshot.name[:12]}: {len(files)} file(s)")
    return {"cache": cache or hub.hub_cache_dir(), "repos": list(repos.values()), "downloads": downloads}


@dataclass
class FetchArgs:
    configfile: list[Path] = field(metadata={
        "help": "the workflow config (configs/paper.yaml); several are merged as snakemake merges them"})
    cache: str | None = field(default=None, metadata={
        "help": "Hub cache folder (default $HF_HUB_CACHE); jobs then need HF_HUB_CACHE set to it"})
    dry_run: bool = field(default=False, metadata={"help": "list what would be fetched; touch nothing"})
    local_files_only: bool = field(default=False, metadata={
        "help": "no network: check the cache holds everything and write the lock from it"})
    lock: Path | None = field(default=None, metadata={"help": "lock file (default <results>/fetch.lock.json)"})


@step_main(FetchArgs)
def main(args: FetchArgs) -> int:
    config = read_configs(args.configfile)
    items = plan(config)
    if args.dry_run:
        names = " ".join(str(p) for p in args.configfile)
        print(f"{names}: {len(items)} item(s) to fetch into {args.cache or hub.hub_cache_dir()}")
        for item in items:
            print(f"  {item.line()}   [{', '.join(item.keys)}]")
        return 0
    lock = fetch(items, args.cache, args.local_files_only)
    lock = {"configfiles": [str(p) for p in args.configfile], **lock, "items": [asdict(i) for i in items]}
    path = args.lock or Path(config.get("results", "results")) / "fetch.lock.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(lock, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(lock['repos'])} repo(s), {len(lock['downloads'])} download(s); run the jobs with "
          f"HF_HUB_OFFLINE=1" + (f" HF_HUB_CACHE={args.cache}" if args.cache else ""))
    return 0


if __name__ == "__main__":
    run_step(main)
