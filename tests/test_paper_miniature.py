"""configs/paper-miniature.yaml, the paper config in miniature: an overlay that changes sizes only (each of its
values a size, or a subset of the paper config's list), and whose plan has every rule of the paper DAG and every
loss / bias / method / granularity branch the paper config plans. The run itself: `python -m
maskbench.tools.miniature` (docs/testing.md); tests/test_paper_miniature_run.py runs part of it in CI."""

import re
from collections import defaultdict

import pytest
import yaml
from test_workflow import REPO, planned_jobs, snakemake

PAPER = yaml.safe_load((REPO / "configs/paper.yaml").read_text(encoding="utf-8"))
MINIATURE = yaml.safe_load((REPO / "configs/paper-miniature.yaml").read_text(encoding="utf-8"))

# keys whose values are sizes: counts of epochs, steps, rows, seeds, batches, tokens, pixels, channels, patience;
# the learning-rate warm-up in steps; where the results go
SIZE_KEYS = {"results", "seeds", "epochs", "batch_size", "eval_batch_size", "max_length", "log_every", "warmup",
             "train_subset", "sizes", "image_size", "n_samples", "heldout", "steps",
             "gate_train", "gate_val", "readout", "gate_patience", "max_gate_epochs", "max_epochs", "checkpoint_every",
             "reset_every", "eval_every", "debiased_epochs", "channels", "hidden", "milestones", "snapshot_epochs",
             "patience", "cooldown", "dev_size", "imp_step", "max_pairs", "batch", "length", "repeats", "rounds",
             "step_hidden", "step_layers", "step_heads", "step_intermediate", "step_batch", "step_seq", "step_repeats",
             "apply_hidden", "apply_layers", "apply_heads", "apply_intermediate", "apply_repeats", "sample", "repeat"}
# the wildcards that name a branch (a loss, bias, method, granularity kind, dataset, table row ...); the others are
# sizes or knob values (seed, sparsity, gamma, value, level's subset size)
BRANCH_WILDCARDS = {"attribute", "dataset", "ffw_method", "gffw", "glayers", "gmode", "granularity", "gtask", "knob",
                    "loss", "mask_method", "method", "row", "run", "source", "start", "task", "vdataset", "level"}


def leaves(tree, path=()):
    """(key path, value) of every leaf; a list of mappings is walked by position ("0", "1", ...)."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, (*path, str(key)))
    elif isinstance(tree, list) and tree and all(isinstance(item, dict) for item in tree):
        for index, item in enumerate(tree):
            yield from leaves(item, (*path, str(index)))
    else:
        yield path, tree


def lookup(tree, path):
    for key in path:
        if isinstance(tree, list) and key.isdigit() and int(key) < len(tree):
            tree = tree[int(key)]
        elif isinstance(tree, dict) and key in tree:
            tree = tree[key]
        else:
            return KeyError
    return tree


def non_size_changes(overlay: dict, paper: dict) -> list[tuple[str, object, object]]:
    """The values ``overlay`` sets that are neither a size, the paper config's own value, nor a subset of its list."""
    changed = []
    for path, value in leaves(overlay):
        base = lookup(paper, path)
        if any(key in SIZE_KEYS for key in path) or value == base:
            continue
        if isinstance(value, list) and isinstance(base, list) and set(map(str, value)) <= set(map(str, base)):
            continue
        changed.append((".".join(path), value, base))
    return changed


def test_the_overlay_changes_sizes_only():
    assert non_size_changes(MINIATURE, PAPER) == []


def test_the_size_check_sees_a_changed_branch():
    """A loss, a granularity the paper config does not plan, or a new key is reported; sizes and subsets are not."""
    overlay = {"masked_debiasing": {"md_hyponly": {"loss": "ce"}},
               "gender": {"runs": {"frozen": {"granularities": ["block16"], "layers": ["last"]}}},
               "srnets": {"ood_informed": {"train": {"fever": [{"dataset": "fever_dev", "repeat": 1}]}}},
               "finetune": {"epochs": 1, "optimizer": "sgd"}}
    assert non_size_changes(overlay, PAPER) == [
        ("masked_debiasing.md_hyponly.loss", "ce", "poe"),
        ("gender.runs.frozen.granularities", ["block16"], ["block32", "block64", "block128", "head"]),
        ("srnets.ood_informed.train.fever.0.dataset", "fever_dev", "fever_symmetric_v2_dev"),
        ("finetune.optimizer", "sgd", KeyError)]


def plan_by_rule(stdout: str) -> dict[str, dict[str, set[str]]]:
    """rule -> wildcard -> the values its planned jobs take."""
    plan: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for block in re.split(r"\n\n|\n(?=\[\w{3} \w{3} )", stdout):  # jobs end at a blank line or the next stamp
        head = re.search(r"^\s*(?:local)?rule (\w+):$", block, re.M)
        if not head:
            continue
        plan[head.group(1)]
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        for item in (wildcards.group(1).split(", ") if wildcards else []):
            key, _, value = item.partition("=")
            plan[head.group(1)][key].add(value)
    return plan


def branch(key: str, value: str) -> str:
    """A granularity's kind (block64 -> block), a start's kind (epoch~10 -> epoch): one size stands for the others."""
    return re.sub(r"~?\d+$", "", value) if key in ("granularity", "start") else value


@pytest.fixture(scope="module")
def miniature_plan(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("mini-dry")  # without the user's files: planning does not need them
    result = snakemake("-n", "--cores", "2", "--configfile", str(REPO / "configs/paper.yaml"),
                       str(REPO / "configs/paper-miniature.yaml"), workdir=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_the_miniature_plans_every_rule_and_branch_of_the_paper_dag(paper_dry_run, miniature_plan):
    paper, mini = plan_by_rule(paper_dry_run.stdout), plan_by_rule(miniature_plan)
    assert set(mini) == set(paper)
    missing = {}
    for rule, wildcards in paper.items():
        for key, values in wildcards.items():
            if key not in BRANCH_WILDCARDS:
                continue
            lost = {branch(key, v) for v in values} - {branch(key, v) for v in mini[rule].get(key, set())}
            if lost:
                missing[f"{rule}.{key}"] = sorted(lost)
    assert missing == {}
    jobs = planned_jobs(miniature_plan)
    assert jobs["total"] < planned_jobs(paper_dry_run.stdout)["total"] / 5


def test_every_page_the_configs_point_to_exists():
    """A config's comments point to pages of the project (docs/...); configs/paper.yaml once pointed to
    method_details.md and datasets.md, which the repository does not have."""
    named = {(path.name, page) for path in (REPO / "configs").glob("*.yaml")
             for page in re.findall(r"(?<![\w./-])((?:docs/)?[\w-]+\.md)\b", path.read_text(encoding="utf-8"))}
    assert named and all(page.startswith("docs/") for _, page in named), sorted(named)
    assert [(config, page) for config, page in sorted(named) if not (REPO / page).is_file()] == []


def test_a_wall_time_is_rounded_once():
    from maskbench.tools.miniature import minutes

    assert [minutes(s) for s in (539.9, 436.2, 59.5, 0.4)] == ["9 min 0 s", "7 min 16 s", "1 min 0 s", "0 min 0 s"]
