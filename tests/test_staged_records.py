"""A job writing one JSON of several records (``maskbench.workflow.staged_records``): each record staged beside the
output when computed, read back by a rerun after a cut-off, and the output byte-equal to an uninterrupted run's."""

import json
import os

import pytest

from maskbench import stop
from maskbench.workflow import staging
from maskbench.workflow.staged_records import StagedRecords


def records(tmp_path, inputs, job=("step", 1)):
    return StagedRecords(tmp_path / "out.json", job, inputs, ["a", "b", "c"], unit="run")


def test_a_record_put_is_read_back_by_the_next_try_and_finish_removes_it(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("x")
    first = records(tmp_path, [source])
    assert first.get("a") is None
    # what a straight run goes on with is what a resumed run reads back: 0.1 + 0.2 and a tuple, through JSON
    assert first.put("a", {"x": 0.1 + 0.2, "t": (1, 2), "n": None}) == {"x": 0.30000000000000004, "t": [1, 2],
                                                                           "n": None}
    [staged] = tmp_path.glob(".out.json.staged-*")
    assert staged.name == f".out.json.staged-{first.keys['a']}"
    second = records(tmp_path, [source])
    assert second.get("a") == {"x": 0.30000000000000004, "t": [1, 2], "n": None}
    assert (second.restored, second.computed) == (1, 0)
    second.finish()
    assert list(tmp_path.glob(".out.json.staged-*")) == []


def test_a_record_of_other_arguments_or_rewritten_inputs_is_not_read_back(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("x")
    records(tmp_path, [source]).put("a", {"v": 1})
    assert records(tmp_path, [source], job=("step", 2)).get("a") is None  # other arguments
    assert records(tmp_path, [source]).get("b") is None  # another record
    os.utime(source, ns=(1, 1))  # the input rewritten since (its time changed)
    assert records(tmp_path, [source]).get("a") is None


def test_a_damaged_staged_record_is_computed_again(tmp_path):
    first = records(tmp_path, [])
    first.put("a", {"v": 1})
    staging.staged_path(tmp_path / "out.json", first.keys["a"]).write_text('{"v": 1')  # cut short
    assert records(tmp_path, []).get("a") is None


def test_a_stop_request_ends_the_job_before_the_next_record_to_compute(tmp_path):
    first = records(tmp_path, [])
    first.put("a", {"v": 1})
    again = records(tmp_path, [])
    stop.request("SIGTERM")
    try:
        assert again.get("a") == {"v": 1}  # a staged record is read back, stop or not
        with pytest.raises(stop.StopRequested, match=r"stopped on SIGTERM after run 1 of 3: state saved to "
                                                     r"finished runs staged beside .*out.json; a rerun goes on "
                                                     r"from run 1"):
            again.get("b")
    finally:
        stop.clear()


@pytest.fixture(scope="module")
def vision_inputs(tmp_path_factory):
    """The kill harness's tiny image splits, an MLP trained on them for an epoch and two magnitude masks of it."""
    from kill_harness import vision_inputs as make

    return make(tmp_path_factory.mktemp("vision"), epochs=1)


def test_a_vision_evaluation_cut_off_after_a_run_reads_it_back_and_ends_byte_equal(vision_inputs, tmp_path, caplog,
                                                                                  monkeypatch):
    """SIGTERM (the flag its handler sets) while the first of three runs is scored: the job ends after it, the
    record staged; the rerun reads it back, scores the other two and writes the JSON an uninterrupted run writes,
    byte for byte, with no staged record left."""
    from maskbench.steps.vision import evaluate

    runs = [{"name": "vanilla", "model_dir": str(vision_inputs / "model"), "mask": None}] + [
        {"name": f"magnitude {s}", "model_dir": str(vision_inputs / "model"),
         "mask": str(vision_inputs / f"sparsity~{s}.mask")} for s in ("0.5", "0.9")]

    def run(out):
        return evaluate.main(["--runs", json.dumps(runs), "--head-train", str(vision_inputs / "train.safetensors"),
                              "--test", str(vision_inputs / "val.safetensors"), "--seed", "1", "--threads", "1",
                              "--head-settings", json.dumps({"max_epochs": 2}), "--out", str(out)])

    straight = tmp_path / "straight" / "eval.json"
    assert run(straight) == 0
    score_run = evaluate.score_run

    def stop_during_the_first_run(*args, **kwargs):
        stop.request("SIGTERM")
        return score_run(*args, **kwargs)

    out = tmp_path / "cut" / "eval.json"
    monkeypatch.setattr(evaluate, "score_run", stop_during_the_first_run)
    try:
        with pytest.raises(stop.StopRequested, match="after run 1 of 3"):
            run(out)
    finally:
        stop.clear()
    monkeypatch.undo()
    assert not out.exists() and len(list(out.parent.glob(".eval.json.staged-*"))) == 1
    caplog.set_level("INFO", logger="maskbench.workflow.staged_records")
    assert run(out) == 0
    assert "at run 1 of 3" in caplog.text and "computed 2 of 3 runs (1 read back" in caplog.text
    assert sorted(p.name for p in out.parent.iterdir()) == ["eval.json"]
    # the provenance names the output path: the two files equal once that is set aside
    strip = lambda path: {**json.loads(path.read_text()), "provenance": None}  # noqa: E731
    assert strip(out) == strip(straight)
    assert out.read_bytes().split(b'"provenance"')[0] == straight.read_bytes().split(b'"provenance"')[0]
