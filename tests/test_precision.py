"""Mixed precision (maskbench.precision): CUDA-only, so on the CPU a fit is the same bits in every precision; the
fp16 GradScaler's state travels with the resume state; the workflow passes the settings only where a config sets
them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from maskbench import precision as prec
from maskbench.cli import shell_args
from maskbench.masking.deciders import MovementSigmoid
from maskbench.masking.engine import attach, outside_autocast
from maskbench.precision import FP32, Precision, PrecisionError, parse_precision
from maskbench.resume import Resume, read_state
from maskbench.training.hooks import Hook
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit
from maskbench.training.optim import trainable_groups
from maskbench.workflow.workflow_config import precision_options

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny fits: one torch thread (on a crowded 2-core machine two threads spin against each other)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class Points(torch.utils.data.Dataset):
    """24 seeded points in 6 dimensions, 3 classes, batches as the loop's objectives read them."""

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(24, 6, generator=g), torch.randint(0, 3, (24,), generator=g)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return i

    def collate(self, indices):
        return {"x": self.x[indices], "labels": self.y[indices]}


def objective(model, batch):
    return torch.nn.functional.cross_entropy(model(batch["x"]), batch["labels"]), {}


def tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 3))


HP = TrainHParams(epochs=2, batch_size=4, learning_rate=1e-2, warmup=0.25, log_every=100)


def fitted(precision: Precision | None, masked: bool = False) -> dict:
    model = tiny_model()
    groups = None
    if masked:  # the mask search's path: movement scores on the first layer, weights frozen
        scores = attach(model, MovementSigmoid(threshold_start=0.0, threshold_end=0.1, total_steps=12), ["0"])
        groups = trainable_groups(model, 1e-2, 0.0, scores=scores, score_lr=0.1, weights=False)
    fit(model, Points(), objective, HP, seed=3, device=torch.device("cpu"), groups=groups, precision=precision)
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_on_the_cpu_every_precision_fits_the_same_bits():
    """The setting is CUDA-only: bf16 and fp16 (with TF32) leave a CPU fit — weights, and a mask search's scores —
    bit-identical to fp32, given directly or as the process's precision (a step's --precision)."""
    for masked in (False, True):
        reference = fitted(FP32, masked)
        for other in (Precision("bf16"), Precision("fp16", tf32=True)):
            state = fitted(other, masked)
            assert all(torch.equal(reference[k], state[k]) for k in reference), (other, masked)
        try:
            prec.use(Precision("fp16"))
            state = fitted(None, masked)
        finally:
            prec.use(FP32)
        assert all(torch.equal(reference[k], state[k]) for k in reference)
    assert any(k.endswith("scores") for k in fitted(FP32, True))  # the masked variant really trained scores


def test_the_cpu_gets_no_autocast_scaler_or_tf32_switch():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    for kind in ("bf16", "fp16"):
        p = Precision(kind, tf32=not before[0])
        with p.autocast(cpu):
            assert not torch.is_autocast_enabled("cpu")
        assert p.grad_scaler(cpu) is None
        p.apply_tf32(cpu)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
        assert p.active(cuda) and p.active("cuda:1") and not p.active(cpu)
    assert Precision("bf16").dtype() is torch.bfloat16 and Precision("fp16").dtype() is torch.float16
    # inside CPU autocast (which maskbench never turns on) the guard still switches it off for the mask
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with outside_autocast("cpu"):
            assert not torch.is_autocast_enabled("cpu")
        assert torch.is_autocast_enabled("cpu")


def test_an_unknown_precision_is_one_error_naming_option_and_value():
    with pytest.raises(PrecisionError, match=r"--precision: 'fp8' is unknown; choose one of \['fp32', 'bf16', 'fp16'\]"):
        parse_precision("fp8")
    with pytest.raises(PrecisionError, match="--tf32: expected true or false, got 'maybe'"):
        parse_precision("fp16", "maybe")
    assert parse_precision("bf16", "True") == Precision("bf16", tf32=True)


class StopAt(Hook):
    def __init__(self, step):
        self.step = step

    def after_step(self, step, total, model):
        if step == self.step:
            raise KeyboardInterrupt


def test_grad_scaler_state_round_trips_through_the_resume_state(tmp_path, monkeypatch):
    """An fp16 run's GradScaler (here a CPU one standing in for CUDA's: same class, same state) is saved with the
    resume state and restored: its scale, which doubles every 2 clean steps, ends where an uninterrupted run's does,
    and the weights are the same bits."""
    made = []

    def scaler(self, device):
        made.append(torch.amp.GradScaler("cpu", init_scale=2.0**4, growth_interval=2))
        return made[-1]

    monkeypatch.setattr(Precision, "grad_scaler", scaler)
    fp16 = Precision("fp16")
    uninterrupted = fitted(fp16)
    full_scale = made[-1].state_dict()
    model, state = tiny_model(), tmp_path / "state.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(model, Points(), objective, HP, seed=3, device=torch.device("cpu"), precision=fp16,
            resume=Resume(state, every=3), hooks=[StopAt(8)])
    saved = read_state(state)
    assert saved["step"] == 6 and saved["grad_scaler"]["scale"] == 2.0**4 * 2**3  # doubled after steps 2, 4, 6
    model = tiny_model()
    fit(model, Points(), objective, HP, seed=3, device=torch.device("cpu"), precision=fp16, resume=Resume(state, every=3))
    assert made[-1].state_dict() == full_scale and full_scale["scale"] == 2.0**4 * 2**6  # 12 steps
    resumed = model.state_dict()
    assert all(torch.equal(uninterrupted[k], resumed[k]) for k in uninterrupted)


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "configs" / name).read_text())


def test_the_workflow_passes_precision_only_where_a_config_sets_it():
    smoke = load("smoke.yaml")
    for section in (None, "srnets", "gender", "vision"):
        assert shell_args(**precision_options(smoke, section)) == ""  # offline command lines unchanged
    paper = load("paper.yaml")
    assert shell_args(**precision_options(paper)) == "--precision fp16"  # paper A's nlu jobs
    assert shell_args(**precision_options(paper, "gender")) == "--precision fp16"  # paper B
    assert shell_args(**precision_options(paper, "srnets")) == ""  # paper C: fp32
    assert shell_args(**precision_options(paper, "vision")) == ""  # paper D: fp32
    assert shell_args(**precision_options({"compute": {"precision": "bf16", "tf32": True}}, "vision")) == \
        "--precision bf16 --tf32"
    with pytest.raises(ValueError, match="section 'finetune' has no precision key"):
        precision_options(paper, "finetune")


def test_outputs_record_the_precision_only_when_set():
    """At fp32 without TF32 a step's provenance and resume key are what they were before the settings existed (so
    an offline run's outputs, mask headers included, keep their bytes); a set precision is recorded."""
    from dataclasses import dataclass, field

    from maskbench.resume import run_key
    from maskbench.runtime import provenance

    @dataclass
    class Before:
        out: str = "x"
        seed: int = field(default=1)

    @dataclass
    class After(Before):
        precision: str = prec.precision_field()
        tf32: bool = prec.tf32_field()

    assert provenance(After())["args"] == provenance(Before())["args"] == {"out": "x", "seed": 1}
    assert run_key(After()) == run_key(Before())
    assert provenance(After(precision="fp16", tf32=True))["args"] == {"out": "x", "seed": 1, "precision": "fp16",
                                                                      "tf32": True}
    assert run_key(After(precision="bf16")) != run_key(Before())


def test_a_step_refuses_an_unknown_precision_as_it_parses(capsys):
    from maskbench.steps.nlu.evaluate import main

    with pytest.raises(SystemExit) as stop:
        main(["--precision", "fp8"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --precision: invalid choice: 'fp8'" in err and "fp32" in err and "fp16" in err
