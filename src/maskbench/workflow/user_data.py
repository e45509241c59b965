"""The files and folders a config reads from the user, checked while planning.

A config names some inputs that neither ship with the project nor come from the Hub: `local:` sources of
`datasets:` (FEVER, PAWS-QQP, your own files), of paper B's task and corpus entries, the folders of paper D's
Corrupted CIFAR-10 and CelebA, torchvision's MNIST folder. Each is a `UserInput`: the config key naming it, the path,
the layout its reader expects (the columns of a text file; the class folders of Corrupted CIFAR-10; CelebA's two
CSV files and its image folder; MNIST's four idx files), the command in docs/data.md that makes it, and the jobs
(rule and wildcards) that read it.

How the workflow uses them (rules/lifecycle.smk): planning never needs them — `snakemake -n` and the cost sheet plan
without them and list what is missing or incomplete (`problems`) — and a run refuses to start, before any job, when a
job it will execute reads one that is missing or incomplete (`problems_for_jobs`), in one line per input naming the
key, the path, what was expected and the command that makes it. The checks read a header, a folder listing, the
first and last file a list names: milliseconds, never the data itself (the preparation step checks every record).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DOCS = "docs/data.md"
# the commands docs/data.md gives for the inputs configs/paper.yaml reads from you, by path (as the config names it)
FEVER_URLS = {"data/fever/fever.train.jsonl": "https://www.dropbox.com/s/v1a0depfg7jp90f/fever.train.jsonl",
              "data/fever/fever.dev.jsonl": "https://www.dropbox.com/s/bdwf46sa2gcuf6j/fever.dev.jsonl"}
PAWS_QQP = ("data/paws_qqp/train.tsv", "data/paws_qqp/dev_and_test.tsv")
CIFAR10C_COMMAND = ("gdown --fuzzy https://drive.google.com/file/d/1_eSQ33m2-okaMWfubO7b8hhvLMlYNJP-/view -O "
                    "downloads/cifar10c.tar.gz && tar -xzf downloads/cifar10c.tar.gz -C data")
CELEBA_COMMAND = ("kaggle datasets download -d jessicali9530/celeba-dataset -p downloads && unzip -q "
                  "downloads/celeba-dataset.zip -d data/celeba")
CIFAR10C_CLASSES = tuple(str(label) for label in range(10))
CELEBA_FILES = ("list_eval_partition.csv", "list_attr_celeba.csv")
MNIST_RAW = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
TABLE_SUFFIXES = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}


@dataclass(frozen=True)
class UserInput:
    key: str                 # the config key naming it: datasets.fever_train.source
    path: str                # as the config names it (a relative path: the working directory, then the project)
    kind: str                # table | file | cifar10c | celeba | mnist_raw
    expected: tuple[str, ...] = ()   # table: source columns; cifar10c: percents; celeba: attribute columns
    fmt: str | None = None   # table: the `format:` key, else from the suffix
    readers: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (rule, wildcards) of the jobs that read it

    def read_by(self, rule: str, wildcards: Mapping[str, str]) -> bool:
        return any(rule == r and all(str(wildcards.get(k)) == v for k, v in w) for r, w in self.readers)

    def places(self, workdir: Path, project: Path) -> list[Path]:
        path = Path(self.path)
        return [path] if path.is_absolute() else list(dict.fromkeys([workdir / path, project / path]))

    def located(self, workdir: Path, project: Path) -> Path | None:
        return next((p for p in self.places(workdir, project) if p.exists()), None)

    @property
    def make(self) -> str:
        """The command in docs/data.md that makes it, with the section it is in."""
        if self.path in FEVER_URLS:
            return (f"mkdir -p data/fever && wget -O {self.path} {FEVER_URLS[self.path]} ({DOCS}, \"FEVER (NLI-style) "
                    "train and dev\")")
        if self.path in PAWS_QQP:
            split = Path(self.path).name
            return (f"python -m maskbench.tools.paws_qqp --qqp downloads/quora_duplicate_questions.tsv --paws "
                    f"downloads/paws_qqp/{split} --out {self.path} ({DOCS}, \"PAWS-QQP\": the downloads first)")
        if self.kind == "cifar10c":
            return f"{CIFAR10C_COMMAND} ({DOCS}, \"Corrupted CIFAR-10 and CelebA\")"
        if self.kind == "celeba":
            return f"{CELEBA_COMMAND} ({DOCS}, \"Corrupted CIFAR-10 and CelebA\")"
        if self.kind == "mnist_raw":
            return ("python -c \"import torchvision; torchvision.datasets.MNIST('<root>', download=True)\" "
                    f"({DOCS}, \"Paper D: images\")")
        return f"your own file: put it there or fix the key ({DOCS}, \"How a dataset is declared\")"

    @property
    def layout(self) -> str:
        """What the reader expects, with a count."""
        if self.kind == "table":
            fmt = table_format(self) or "jsonl, csv, tsv or parquet"
            columns = ", ".join(self.expected)
            return (f"a {fmt} file with the {len(self.expected)} column(s) its `columns:` maps: {columns}"
                    if self.expected else f"a non-empty {fmt} file")
        if self.kind == "cifar10c":
            folders = _cifar10c_parts(self.expected)
            return (f"LfF/DFA's folders {', '.join(folders)}, each with the {len(CIFAR10C_CLASSES)} class folders "
                    f"0-9 of *_<label>_<bias>.png files ({len(folders) * len(CIFAR10C_CLASSES)} class folders)")
        if self.kind == "celeba":
            return (f"CelebA's {len(CELEBA_FILES)} files {' and '.join(CELEBA_FILES)} (Kaggle's CSV layout, the "
                    f"latter with image_id and the {len(self.expected)} attribute(s) {', '.join(self.expected)}) and "
                    "img_align_celeba/ holding every image the partition file lists")
        if self.kind == "mnist_raw":
            return f"torchvision's MNIST/raw/ with its {len(MNIST_RAW)} idx files ({', '.join(MNIST_RAW)}, or .gz)"
        return "a non-empty file"

    def problem(self, workdir: str | os.PathLike, project: str | os.PathLike) -> str | None:
        """None when it is there in the expected layout, else one line: key, path, what is wrong, what was
        expected and the command that makes it."""
        workdir, project = Path(workdir).absolute(), Path(project).absolute()
        found = self.located(workdir, project)
        if found is None:
            looked = " nor ".join(str(p) for p in self.places(workdir, project))
            wrong = f"does not exist (neither {looked})" if len(self.places(workdir, project)) > 1 else \
                "does not exist"
        else:
            wrong = CHECKS[self.kind](self, found)
            if wrong is None:
                return None
        return f"{self.key}: {self.path} {wrong}; expected {self.layout}; make it with: {self.make}"


# ------------------------------------------------------------------------------------------------ layout checks


def table_format(item: UserInput) -> str | None:
    """A table's format: its `format:` key, else its suffix's (a .gz suffix aside)."""
    suffixes = [s.lower() for s in Path(item.path).suffixes if s.lower() != ".gz"]
    return item.fmt or (TABLE_SUFFIXES.get(suffixes[-1]) if suffixes else None)


def _first_line(path: Path) -> str | None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
        for line in handle:
            if line.strip():
                return line
    return None


def _table(item: UserInput, path: Path) -> str | None:
    if not path.is_file():
        return "is not a file"
    fmt = table_format(item)
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq

            has = pq.read_schema(path).names
        except Exception as err:  # noqa: BLE001 - a damaged or foreign file, whichever way pyarrow says it
            return f"is not a parquet file ({type(err).__name__})"
    else:
        first = _first_line(path)
        if first is None:
            return "is empty"
        if fmt == "jsonl":
            if first.lstrip().startswith("["):
                return None  # a JSON array: the preparation reads it whole
            try:
                record = json.loads(first)
            except json.JSONDecodeError:
                return f"does not start with a JSON object (its first line: {first.strip()[:60]!r})"
            if not isinstance(record, dict):
                return f"does not start with a JSON object (its first line: {first.strip()[:60]!r})"
            has = list(record)
        elif fmt in ("csv", "tsv"):
            options = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}
            has = next(csv.reader([first.rstrip("\r\n")], **options))
        else:
            return None  # an unknown format: the preparation names it
    missing = [c for c in item.expected if c not in has]
    if missing:
        return (f"lacks {len(missing)} of the {len(item.expected)} column(s) named: {', '.join(missing)} (its columns: "
                f"{', '.join(map(str, has[:12]))}{', ...' if len(has) > 12 else ''})")
    return None


def _file(item: UserInput, path: Path) -> str | None:
    if not path.is_file():
        return "is not a file"
    return "is empty" if path.stat().st_size == 0 else None


def _has_png(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return any(e.name.endswith(".png") for e in entries)


def _cifar10c_parts(percents: Sequence[str]) -> list[str]:
    """The folders of Corrupted CIFAR-10 the levels' percents read: <percent>/align, <percent>/conflict, test."""
    return [f"{p}/{part}" for p in percents for part in ("align", "conflict")] + ["test"]


def _cifar10c(item: UserInput, root: Path) -> str | None:
    if not root.is_dir():
        return "is not a folder"
    absent, empty = [], []
    parts = _cifar10c_parts(item.expected)
    for part in parts:
        for label in CIFAR10C_CLASSES:
            folder = root / part / label
            if not folder.is_dir():
                absent.append(f"{part}/{label}")
            elif not _has_png(folder) and part.endswith(("align", "test")):
                empty.append(f"{part}/{label}")
    total = len(parts) * len(CIFAR10C_CLASSES)
    if absent:
        return f"lacks {len(absent)} of the {total} class folders (first: {absent[0]})"
    if empty:
        return f"has {len(empty)} class folder(s) without a *.png file (first: {empty[0]})"
    return None


def _csv_header(path: Path) -> list[str]:
    first = _first_line(path) or ""
    return next(csv.reader([first.rstrip("\r\n")]), [])


def _celeba(item: UserInput, root: Path) -> str | None:
    if not root.is_dir():
        return "is not a folder"
    absent = [name for name in CELEBA_FILES if not (root / name).is_file()]
    if absent:
        return f"lacks {len(absent)} of its {len(CELEBA_FILES)} files: {', '.join(absent)}"
    partition = _csv_header(root / CELEBA_FILES[0])
    if not {"image_id", "partition"} <= set(partition):
        return f"has a {CELEBA_FILES[0]} without the columns image_id and partition (its header: {partition[:4]})"
    attributes = _csv_header(root / CELEBA_FILES[1])
    missing = [c for c in ("image_id", *item.expected) if c not in attributes]
    if missing:
        return f"has a {CELEBA_FILES[1]} without the column(s) {', '.join(missing)}"
    folder = root / "img_align_celeba"
    if (folder / "img_align_celeba").is_dir():
        folder = folder / "img_align_celeba"  # Kaggle's doubly nested folder
    with open(root / CELEBA_FILES[0], encoding="utf-8", errors="replace") as handle:
        rows = [line.split(",", 1)[0] for line in handle.read().splitlines()[1:] if line.strip()]
    if not rows:
        return f"has a {CELEBA_FILES[0]} that lists no image"
    if not folder.is_dir():
        return f"has no img_align_celeba/ folder for the {len(rows):,} images {CELEBA_FILES[0]} lists"
    for name, which in ((rows[0], "first"), (rows[-1], "last")):
        if not (folder / name).is_file():
            return (f"lacks {name} in {folder.relative_to(root)}/, the {which} of the {len(rows):,} images "
                    f"{CELEBA_FILES[0]} lists")
    return None


def _mnist_raw(item: UserInput, root: Path) -> str | None:
    folder = root / "MNIST" / "raw"
    absent = [name for name in MNIST_RAW if not (folder / name).is_file() and not (folder / f"{name}.gz").is_file()]
    if absent:
        return f"lacks {len(absent)} of the {len(MNIST_RAW)} idx files in MNIST/raw/ (first: {absent[0]})"
    return None


CHECKS = {"table": _table, "file": _file, "cifar10c": _cifar10c, "celeba": _celeba, "mnist_raw": _mnist_raw}


# ------------------------------------------------------------------------------------------------ the config's inputs


def _local(source: object) -> str | None:
    return source.removeprefix("local:") if isinstance(source, str) and source.startswith("local:") else None


def _table_input(key: str, spec: Mapping, readers) -> UserInput | None:
    path = _local(spec.get("source"))
    if path is None:
        return None
    columns = tuple(dict.fromkeys(str(c) for c in (spec.get("columns") or {}).values()))
    return UserInput(key, path, "table", columns, spec.get("format"), readers)


def _readers(rule: str, **wildcards: str) -> tuple:
    return ((rule, tuple(sorted(wildcards.items()))),)


def user_inputs(config: Mapping) -> list[UserInput]:
    """Every file or folder the config reads from the user (shipped files among them: they pass the checks)."""
    out: list[UserInput] = []
    for name, spec in (config.get("datasets") or {}).items():
        out.append(_table_input(f"datasets.{name}.source", spec, _readers("prepare_dataset", dataset=name)))
    gender = config.get("gender") or {}
    corpus = gender.get("corpus") or {}
    if corpus.get("source") == "dataset":
        out.append(_table_input("gender.corpus.dataset.source", corpus.get("dataset") or {}, _readers("gender_corpus")))
    elif _local(corpus.get("source")):
        out.append(UserInput("gender.corpus.source", _local(corpus["source"]), "file", readers=_readers("gender_corpus")))
    for task, splits in ((gender.get("performance") or {}).get("tasks") or {}).items():
        for split in ("train", "dev"):
            if isinstance(splits.get(split), Mapping):
                out.append(_table_input(f"gender.performance.tasks.{task}.{split}.source", splits[split],
                                        _readers("gender_task_data", gtask=task, gsplit=split)))
    vision = config.get("vision") or {}
    datasets = vision.get("datasets") or {}
    for name, spec in datasets.items():
        path = _local(spec.get("source"))
        if path and spec.get("generator") == "cifar10c":
            percents = tuple(dict.fromkeys(str(level.get("percent", "0.5pct")) for level in spec["levels"].values()))
            out.append(UserInput(f"vision.datasets.{name}.source", path, "cifar10c", percents,
                                 readers=_readers("prepare_vision", vdataset=name)))
        elif path and spec.get("generator") == "celeba":
            targets = [str(level.get("target", "Blond_Hair")) for level in spec["levels"].values()]
            out.append(UserInput(f"vision.datasets.{name}.source", path, "celeba",
                                 tuple(dict.fromkeys([*targets, "Male"])), readers=_readers("prepare_vision",
                                                                                          vdataset=name)))
    mnist = str((vision.get("mnist") or {}).get("source", ""))
    if mnist.startswith("torchvision:"):
        from maskbench.tracks.vision.workflow_plan import MNIST_GENERATORS

        readers = tuple(r for name, spec in datasets.items() if spec.get("generator") in MNIST_GENERATORS
                        for r in _readers("prepare_vision", vdataset=name))
        out.append(UserInput("vision.mnist.source", mnist.removeprefix("torchvision:"), "mnist_raw", readers=readers))
    return [item for item in out if item is not None]


def problems(inputs: Iterable[UserInput], workdir, project) -> list[str]:
    """One line for each input that is missing or not in its layout."""
    return [p for p in (item.problem(workdir, project) for item in inputs) if p]


def problems_for_jobs(inputs: Sequence[UserInput], jobs: Iterable[tuple[str, Mapping[str, str]]], workdir,
                      project) -> list[str]:
    """The problems of the inputs that the given jobs (rule name, wildcards) read."""
    jobs = list(jobs)
    return problems([item for item in inputs if any(item.read_by(rule, w) for rule, w in jobs)], workdir, project)


def refusal(lines: Sequence[str]) -> str:
    """The one line a run that needs missing inputs is refused with: the first in full, the others' keys."""
    others = [line.split(":", 1)[0] for line in lines[1:]]
    more = f" (and {len(others)} more: {', '.join(others)}; snakemake -n lists them all)" if others else ""
    return f"{lines[0]}{more}"
