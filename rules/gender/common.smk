# The gender track's helpers (paper B): names from the config, path builders and the runs the report reads.
# Module-level code only reads the config: it re-runs inside every cluster job.

GENDER = "gender"  # the track's folder under results/
GCFG = config["gender"]
GMODEL = GCFG["model"]["name"]
GRUNS = GCFG["runs"]
GWORDS = {
    key: os.path.join(workflow.basedir, path)
    for key, path in {
        "male": "data/gender/male.txt",
        "female": "data/gender/female.txt",
        "stereotype": "data/gender/stereotype.txt",
        **GCFG.get("words", {}),
    }.items()
}
SEAT_FOLDER = os.path.join(workflow.basedir, GCFG["seat"].get("folder", "data/gender/seat"))
SEAT_FILES = [os.path.join(SEAT_FOLDER, f"{test}.jsonl") for test in GCFG["seat"]["tests"]]
GENDER_CORPUS = f"{R}/{GENDER}/data/corpus.parquet"
GBASE = f"{R}/{GENDER}/{GMODEL}"
# the encoder every run starts from: a pre-trained model as named, or one the workflow initialises (smoke runs)
GSCRATCH = GCFG["model"].get("init", "pretrained") == "scratch"
GENCODER_INPUT = [f"{GBASE}/encoder/train_summary.json"] if GSCRATCH else []


wildcard_constraints:
    granularity=r"block\d+|head",
    glayers=r"first|last|all|intermediate",
    gmode=r"token|sentence",
    gkind=r"frozen|unfrozen",
    gtask=r"[A-Za-z0-9_]+",
    gsplit=r"train|dev",


def gender_spec(kind, granularity, layers, mode, objective=None):
    """The DebiasSpec of one run (maskbench.tracks.gender.training): the objective (a gender.runs.objectives row's
    own settings over gender.objective), the pruning settings, and the run's own grid point."""
    own = GRUNS["objectives"][objective]["objective"] if objective else {}
    spec = {"layers": layers, "mode": mode, **GCFG.get("objective", {}), **own}
    if kind == "debias_only":
        return {**spec, "granularity": "none", "freeze_weights": False}
    pruning = {k: v for k, v in GCFG["pruning"].items() if k != "hparams"}
    grain = {"granularity": "head"} if granularity == "head" else {"granularity": "block", "block": int(granularity[5:])}
    return {**spec, **pruning, **grain, "freeze_weights": kind == "frozen"}


def gender_hparams(kind):
    return (GCFG["debias_only"] if kind == "debias_only" else GCFG["pruning"])["hparams"]


def frozen_mask(granularity, layers, mode, seed):
    return f"{GBASE}/frozen/{granularity}/layers~{layers}/mode~{mode}/seed~{seed}.mask"


def trained_dir(kind, granularity, layers, mode, seed, objective=None):
    """The checkpoint folder of a run whose weights train (unfrozen pruning, debias only; a gender.runs.objectives
    row one folder deeper, objective~<name>)."""
    if kind == "debias_only":
        row = f"/objective~{objective}" if objective else ""
        return f"{GBASE}/debias_only/layers~{layers}/mode~{mode}{row}/seed~{seed}"
    return f"{GBASE}/{kind}/{granularity}/layers~{layers}/mode~{mode}/seed~{seed}"


# paper B's GLUE column: every run's encoder fine-tuned on each task (the config's gender.performance)
GPERF = GCFG.get("performance") or {}
GTASKS = list(GPERF.get("tasks", {}))


# the masked-LM bias measures (gender.lm_bias): a head fitted once on the pre-trained encoder (or the model's own),
# CrowS-Pairs and, when named, StereoSet, for every run and the original
GLM = GCFG.get("lm_bias") or {}
GLM_HEAD = f"{GBASE}/mlm_head.safetensors"
GLM_CROWS = os.path.join(workflow.basedir, GLM["crows_pairs"]["file"]) if GLM.get("crows_pairs") else None
GENDER_ORIGINAL_LM = f"{GBASE}/original.lm.json" if GLM else None


def lm_bias_options():
    """The gender_lm_bias arguments the config sets (the CrowS-Pairs file is an input)."""
    opts = [f"--batch-size {GLM.get('batch_size', 64)}", f"--max-length {GLM.get('max_length', 128)}"]
    crows = GLM.get("crows_pairs")
    if crows:
        opts += [f"--crows-max-pairs {crows.get('max_pairs', 0)}", f"--seed {crows.get('seed', 0)}"]
    stereoset = GLM.get("stereoset")
    if stereoset:
        opts += [f"--stereoset-intra {shlex.quote(stereoset['intrasentence'])}",
                 f"--stereoset-inter {shlex.quote(stereoset['intersentence'])}",
                 f"--stereoset-split {shlex.quote(stereoset.get('split', 'validation'))}"]
    return " ".join(opts)


def gender_task_metric(task):
    """The task's dev metric (gender.performance.tasks.<task>.metric; accuracy when absent)."""
    return GPERF["tasks"][task].get("metric", "accuracy")


def gender_corpus_file(wildcards):
    """The corpus's local file: gender.corpus.source local:<file>, or the file of gender.corpus.dataset."""
    corpus = GCFG["corpus"]
    if corpus["source"] == "dataset":
        return local_file(corpus["dataset"]["source"], "gender corpus", "gender.corpus.dataset.source")
    return local_file(corpus["source"], "gender corpus", "gender.corpus.source")


def gender_corpus_dataset_options(wildcards, input):
    """--dataset-spec (and its resolved --local-file) for a corpus read from a dataset."""
    corpus = GCFG["corpus"]
    if corpus["source"] != "dataset":
        return ""
    local = f" --local-file {quoted(input.local)}" if input.local else ""
    return f" --dataset-spec {as_json(corpus['dataset'])}{local}"


def gender_task_local_file(wildcards):
    """A task split's local file (a registry entry with a local: source), an input of its preparation."""
    spec = GPERF["tasks"][wildcards.gtask][wildcards.gsplit]
    return local_file(spec["source"], f"gender task {wildcards.gtask} {wildcards.gsplit}",
                      f"gender.performance.tasks.{wildcards.gtask}.{wildcards.gsplit}.source")


def gender_task_spec(task, split):
    """The registry entry of a task split, with `single_text: true` when the task reads one text (CoLA, SST-2):
    the prepare step then leaves text_b empty instead of refusing a dataset without a second text."""
    spec = GPERF["tasks"][task][split]
    return {**spec, "single_text": True} if GPERF["tasks"][task].get("single_text") else spec


def gender_task_data(task, split):
    return f"{R}/{GENDER}/data/tasks/{task}/{split}.parquet"


def gender_task_original(task, seed):
    """The pre-trained encoder fine-tuned on a task: one per seed (the head's initialisation and data order)."""
    return f"{GBASE}/original/seed~{seed}.task~{task}.json"


def gender_runs():
    """Every planned run: kind, granularity (None for debias only), layers, mode, seed, its output and summary."""
    runs = []
    for kind in ("frozen", "unfrozen"):
        grid = GRUNS.get(kind)
        if not grid:
            continue
        for granularity in grid["granularities"]:
            for layers in grid["layers"]:
                for mode in grid["modes"]:
                    for seed in SEEDS:
                        out = (frozen_mask(granularity, layers, mode, seed) if kind == "frozen"
                               else trained_dir(kind, granularity, layers, mode, seed))
                        runs.append({"kind": kind, "granularity": granularity, "layers": layers, "mode": mode,
                                     "seed": seed, "out": out})
    grid = GRUNS.get("debias_only")
    if grid:
        for layers in grid["layers"]:
            for mode in grid["modes"]:
                for seed in SEEDS:
                    runs.append({"kind": "debias_only", "granularity": None, "layers": layers, "mode": mode,
                                 "seed": seed, "out": trained_dir("debias_only", None, layers, mode, seed)})
    return with_outputs(runs)


def gender_objective_runs():
    """The gender.runs.objectives rows (each of every seed), records as gender_runs' with the row's name under
    "objective"; evaluated like the grids' runs, rows of their own in the report's tables (an objective column)."""
    runs = [{"kind": row["kind"], "granularity": None, "layers": row["layers"], "mode": row["mode"], "seed": seed,
             "objective": name, "out": trained_dir(row["kind"], None, row["layers"], row["mode"], seed, name)}
            for name, row in GRUNS.get("objectives", {}).items() for seed in SEEDS]
    return with_outputs(runs)


def with_outputs(runs):
    """Each run record with its summary, SEAT, task and masked-LM files and its finished marker."""
    for run in runs:
        stem = run["out"].removesuffix(".mask")
        run["summary"] = f"{stem}.json"
        run["seat"] = f"{stem}.seat.json"
        run["tasks"] = {task: f"{stem}.task~{task}.json" for task in GTASKS}
        run["lm"] = f"{stem}.lm.json" if GLM else None
        run["marker"] = run["out"] if run["kind"] == "frozen" else f"{run['out']}/train_summary.json"
    return runs


GENDER_RUNS = gender_runs()
GENDER_OBJECTIVE_RUNS = gender_objective_runs()
GENDER_ORIGINAL_SEAT = f"{GBASE}/original.seat.json"
GENDER_ORIGINAL_TASKS = {task: [gender_task_original(task, seed) for seed in SEEDS] for task in GTASKS}
GENDER_TABLES = [f"{R}/tables/{GENDER}/{name}" for name in ("runs.csv", "seat_long.csv", "tables.md")]
GENDER_FIGURES = [f"{R}/figures/{GENDER}/{name}.png" for name in ("layer_density", "heads")]
# paper B's figure 3 (task accuracy against bias) when the config measures task performance
GENDER_PERFORMANCE_FIGURE = (
    [report(f"{R}/figures/{GENDER}/performance_bias.png", caption="captions/gender_performance.rst",
            category="Paper B")] if GTASKS else [])
GENDER_FIGURES += [f"{R}/figures/{GENDER}/performance_bias.png"] if GTASKS else []

# structured masks shrunk into smaller dense encoders (gender.shrink): the first seed's frozen masks of the named
# granularities, their parameter counts and CPU latency beside the dense encoder's
GSHRINK = GCFG.get("shrink") or {}
GENDER_STRUCTURED = f"{R}/benchmarks/structured.json"
GSHRINK_MASKS = [run["out"] for run in GENDER_RUNS if run["kind"] == "frozen" and run["seed"] == SEEDS[0]
                 and run["granularity"] in GSHRINK.get("granularities", [])]

TARGETS["prepare"] += [GENDER_CORPUS]
TARGETS["all"] += [GENDER_STRUCTURED] if GSHRINK_MASKS else []
TARGETS["masks"] += [run["marker"] for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS]
TARGETS["prepare"] += [gender_task_data(task, split) for task in GTASKS for split in ("train", "dev")]
TARGETS["evaluate"] += [run["seat"] for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS] + [GENDER_ORIGINAL_SEAT]
TARGETS["evaluate"] += [path for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS for path in run["tasks"].values()]
TARGETS["evaluate"] += [path for paths in GENDER_ORIGINAL_TASKS.values() for path in paths]
TARGETS["evaluate"] += [run["lm"] for run in GENDER_RUNS + GENDER_OBJECTIVE_RUNS if run["lm"]]
TARGETS["evaluate"] += [GENDER_ORIGINAL_LM] if GLM else []
TARGETS["all"] += GENDER_TABLES + GENDER_FIGURES


def gender_dir_parts(gdir):
    """(kind, granularity, layers, mode, objective row or None) of a trained run's folder below the model's:
    unfrozen/<g>/layers~/mode~ or debias_only/layers~/mode~[/objective~<row>]."""
    parts = gdir.split("/")
    values = {p.split("~", 1)[0]: p.split("~", 1)[1] for p in parts if "~" in p}
    granularity = parts[1] if parts[0] == "unfrozen" else None
    return parts[0], granularity, values["layers"], values["mode"], values.get("objective")


def task_data_input(wildcards):
    return {"train": gender_task_data(wildcards.gtask, "train"), "dev": gender_task_data(wildcards.gtask, "dev")}


def seat_run_input(wildcards):
    """The finished output of the run a per-run evaluation (SEAT, task, masked-LM bias) reads: the mask, or the
    checkpoint's marker."""
    stem = f"{GBASE}/{wildcards.grun}/seed~{wildcards.seed}"
    return f"{stem}.mask" if wildcards.grun.startswith("frozen/") else f"{stem}/train_summary.json"


def encoder_of_input(wildcards, input):
    """A params function: the encoder a job starts from — the scratch encoder's folder (from its marker, an input)
    or the pre-trained model the config names."""
    return os.path.dirname(input.encoder[0]) if GSCRATCH else GCFG["model"]["path"]
