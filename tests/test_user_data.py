"""The files and folders a config reads from the user (src/maskbench/workflow/user_data.py): each checked in the layout its
reader expects, on real folders written in those layouts (maskbench.miniature), one line each naming the config key,
the path, what was expected and the command of docs/data.md that makes it; planning and pricing go on without them,
and only the jobs a run executes decide whether it is refused (the refusal itself: tests/test_real_nli_data.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml

from maskbench.miniature.text_sources import write_text_sources
from maskbench.miniature.vision_sources import write_vision_sources
from maskbench.workflow import user_data

REPO = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((REPO / "configs/paper.yaml").read_text(encoding="utf-8"))
USER_KEYS = ["datasets.paws.source", "datasets.fever_train.source", "datasets.fever_dev.source",
             "datasets.paws_qqp_train.source", "vision.datasets.corrupted_cifar10.source",
             "vision.datasets.celeba.source"]


def test_the_paper_config_reads_four_files_and_two_folders_from_you():
    inputs = {item.key: item for item in user_data.user_inputs(PAPER)}
    shipped = ["datasets.fever_symmetric_v1.source", "datasets.fever_symmetric_v2.source",
               "datasets.fever_symmetric_v2_dev.source"]
    assert sorted(inputs) == sorted(USER_KEYS + shipped)
    assert user_data.problems([inputs[k] for k in shipped], REPO, REPO) == []  # data/nli/ ships them
    cifar = inputs["vision.datasets.corrupted_cifar10.source"]
    assert (cifar.path, cifar.kind, cifar.expected) == ("data/cifar10c", "cifar10c", ("0.5pct", "1pct", "2pct", "5pct"))
    assert cifar.read_by("prepare_vision", {"vdataset": "corrupted_cifar10", "level": "0.99"})
    assert not cifar.read_by("prepare_vision", {"vdataset": "celeba", "level": "Glasses"})
    assert inputs["vision.datasets.celeba.source"].expected == ("Blond_Hair", "Eyeglasses", "Male")
    assert inputs["datasets.fever_train.source"].expected == ("id", "evidence", "claim", "gold_label")


def test_what_is_missing_is_one_line_each_with_key_path_layout_and_command(tmp_path):
    found = user_data.problems(user_data.user_inputs(PAPER), tmp_path, REPO)
    assert [line.split(":", 1)[0] for line in found] == USER_KEYS
    assert all("\n" not in line for line in found)
    fever = found[1]
    assert fever == (f"datasets.fever_train.source: data/fever/fever.train.jsonl does not exist (neither "
                     f"{tmp_path / 'data/fever/fever.train.jsonl'} nor {REPO / 'data/fever/fever.train.jsonl'}); "
                     "expected a jsonl file with the 4 column(s) its `columns:` maps: id, evidence, claim, gold_label; "
                     "make it with: mkdir -p data/fever && wget -O data/fever/fever.train.jsonl "
                     "https://www.dropbox.com/s/v1a0depfg7jp90f/fever.train.jsonl (docs/data.md, \"FEVER (NLI-style) "
                     "train and dev\")")
    assert ("expected LfF/DFA's folders 0.5pct/align, 0.5pct/conflict, 1pct/align, 1pct/conflict, 2pct/align, "
            "2pct/conflict, 5pct/align, 5pct/conflict, test, each with the 10 class folders 0-9 of "
            "*_<label>_<bias>.png files (90 class folders); make it with: gdown") in found[4]
    assert "make it with: python -m maskbench.tools.paws_qqp --qqp downloads/quora_duplicate_questions.tsv" in found[0]
    assert "kaggle datasets download -d jessicali9530/celeba-dataset" in found[5]
    # every command and section named is in docs/data.md (its commands' continued lines joined)
    docs = re.sub(r"\\\n\s*", "", (REPO / "docs/data.md").read_text(encoding="utf-8"))
    for item in user_data.user_inputs(PAPER):
        if item.key not in USER_KEYS:
            continue
        command, _, section = item.make.rpartition(" (docs/data.md, ")
        assert command.split(" && ")[-1] in docs, command
        assert f"## {section.split(chr(34))[1]}" in docs or f"### {section.split(chr(34))[1]}" in docs, section


def test_the_real_layouts_pass_and_each_defect_is_named_with_its_count(tmp_path):
    write_text_sources(tmp_path, n=6)
    write_vision_sources(tmp_path, n_per_class=1, size=4)
    inputs = {item.key: item for item in user_data.user_inputs(PAPER)}
    assert user_data.problems(inputs.values(), tmp_path, REPO) == []

    def problem(key):
        return inputs[key].problem(tmp_path, REPO).split("; expected")[0]

    shutil.rmtree(tmp_path / "data/cifar10c/2pct/conflict/3")
    assert problem("vision.datasets.corrupted_cifar10.source") == (
        "vision.datasets.corrupted_cifar10.source: data/cifar10c lacks 1 of the 90 class folders (first: "
        "2pct/conflict/3)")
    for png in (tmp_path / "data/cifar10c/test/7").iterdir():
        png.unlink()
    shutil.copytree(tmp_path / "data/cifar10c/1pct/conflict/4", tmp_path / "data/cifar10c/2pct/conflict/3")
    assert problem("vision.datasets.corrupted_cifar10.source").endswith(
        "has 1 class folder(s) without a *.png file (first: test/7)")
    images = sorted((tmp_path / "data/celeba/img_align_celeba").iterdir())
    images[-1].unlink()
    assert problem("vision.datasets.celeba.source") == (
        f"vision.datasets.celeba.source: data/celeba lacks {images[-1].name} in img_align_celeba/, the last of the "
        f"{len(images)} images list_eval_partition.csv lists")
    attributes = tmp_path / "data/celeba/list_attr_celeba.csv"
    attributes.write_text(attributes.read_text().replace("Eyeglasses", "Glasses", 1))
    assert problem("vision.datasets.celeba.source").endswith("has a list_attr_celeba.csv without the column(s) "
                                                             "Eyeglasses")
    fever = tmp_path / "data/fever/fever.dev.jsonl"
    records = [json.loads(line) for line in fever.read_text().splitlines()]
    fever.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "gold_label"}) + "\n" for r in records))
    assert problem("datasets.fever_dev.source").startswith(
        "datasets.fever_dev.source: data/fever/fever.dev.jsonl lacks 1 of the 4 column(s) named: gold_label (its "
        "columns: ")
    (tmp_path / "data/paws_qqp/train.tsv").write_text("")
    assert problem("datasets.paws_qqp_train.source") == "datasets.paws_qqp_train.source: data/paws_qqp/train.tsv is empty"
    # a run is held only to what its own jobs read: preparing CelebA's levels reads CelebA alone
    jobs = [("prepare_vision", {"vdataset": "celeba", "level": "Glasses"}), ("train_vision", {"vdataset": "celeba"})]
    found = user_data.problems_for_jobs(list(inputs.values()), jobs, tmp_path, REPO)
    assert [line.split(":", 1)[0] for line in found] == ["vision.datasets.celeba.source"]
    everything = user_data.problems(inputs.values(), tmp_path, REPO)
    assert user_data.refusal(everything) == (
        f"{everything[0]} (and 3 more: datasets.paws_qqp_train.source, vision.datasets.corrupted_cifar10.source, "
        "vision.datasets.celeba.source; snakemake -n lists them all)")


def test_the_cost_sheet_lists_what_its_planned_jobs_read_and_lack(tmp_path):
    """The cost sheet's list (python -m maskbench.tools.cost; the plan itself: tests/test_workflow.py plans the
    paper config without the user's files): only the inputs the planned jobs read, here CelebA's folder."""
    from test_cost import block

    from maskbench.tools import cost

    text = (block("prepare_vision", ["results/paper/vision/celeba/Glasses/train.safetensors"],
                  "python -m maskbench.steps vision.prepare --source local:data/celeba", wildcards="vdataset=celeba, "
                  "level=Glasses", resources="mem_mb=16000, runtime=120")
            + block("prepare_dataset", ["results/paper/nlu/data/prepared/mnli_dev.parquet"],
                    "python -m maskbench.steps prepare --name mnli_dev", wildcards="dataset=mnli_dev"))
    [line] = cost.missing_inputs(text, PAPER, tmp_path)
    assert line.startswith("vision.datasets.celeba.source: data/celeba does not exist (neither ")
    assert cost.missing_markdown([line]) == (
        "\nNot there yet — the plan is priced without them; a run whose jobs read them is refused before it starts "
        f"(1; docs/data.md):\n- {line}\n")
    assert cost.missing_markdown([]) == ""
