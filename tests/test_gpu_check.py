"""The prepared GPU check (maskbench.benchmarks.gpu_check) at --quick sizes on the CPU: its JSON, its skips, the resumed
run's bit-equal weights, the CPU-runnable benchmark code paths, and a failing section that does not stop the rest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import background
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
CUDA_SECTIONS = ("finetune_steps", "mask_search_steps", "reference_loop", "side_by_side", "evaluation", "profile",
                 "compiled", "smoke_dag")


def run_quick_check(factory):
    """The whole check as the CLI runs it (`--quick` on one thread), in a fresh interpreter that must not import
    snakemake or datasets (the GPU machine has neither): its process and the JSON it wrote (the background lane runs
    it, tests/conftest.py)."""
    out = factory.mktemp("gpu-check") / "gpu_check.json"
    script = ("import sys; from maskbench.benchmarks import gpu_check; gpu_check.main(sys.argv[1:]); "
              "print(sorted({'snakemake', 'datasets'} & set(sys.modules)))")
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script, "--quick", "--threads", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=env)
    return done, out


@pytest.fixture(scope="session")
def quick_gpu_check(tmp_path_factory):
    """The quick run of ``run_quick_check``, from the background lane (tests/conftest.py)."""
    return background.result("quick_gpu_check", lambda: run_quick_check(tmp_path_factory))


@pytest.mark.skipif(torch.cuda.is_available(), reason="asserts the CPU skips")
def test_quick_run_on_cpu(quick_gpu_check):
    done, out = quick_gpu_check
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "[]"  # nothing unavailable on the GPU machine was imported
    report = json.loads(out.read_text())
    sections = report["sections"]
    assert list(sections) == ["environment", *CUDA_SECTIONS[:5], "resume_on_cuda", *CUDA_SECTIONS[5:]]
    # one summary line per section, in order
    assert [line.split(":")[0] for line in lines[:-1] if line.split(":")[0] in sections] == list(sections)
    env = sections["environment"]
    assert env["status"] == "ok" and env["torch"] == torch.__version__ and env["cuda_available"] is False
    for name in CUDA_SECTIONS:
        assert sections[name]["status"] == "skipped" and "no CUDA" in sections[name]["reason"], sections[name]
    resume = sections["resume_on_cuda"]
    fp32 = resume["variants"]["fp32"]
    assert resume["status"] == "ok" and resume["device"] == "cpu" and resume["equal"] is True
    assert fp32["equal"] is True and fp32["max_abs_diff"] == 0.0
    # stopped after step 4, resumed from the state saved at step 2 (every 2 steps; a stop comes before its save)
    assert (fp32["stopped_after_step"], fp32["resumed_from_step"]) == (4, 2)


def test_cpu_code_paths_and_a_failing_section(tmp_path, monkeypatch):
    """--allow-cpu runs the benchmark sections' code on the CPU: every variant times its steps (at the check's batch
    and the larger ones), the reference loop runs, the profile counts the host reads of each loop, and bf16 leaves
    the CPU's probabilities exactly as fp32's (the setting is CUDA-only); a section that raises is recorded as
    failed with its error, and the sections after it still run and are written."""
    from maskbench.benchmarks import gpu_check

    def broken(sizes, allow_cpu):
        raise RuntimeError("injected failure")

    monkeypatch.setitem(gpu_check.RUNNERS, "environment", broken)
    out = tmp_path / "check.json"
    gpu_check.main(["--quick", "--allow-cpu", "--threads", "1", "--sections",
                    "environment,finetune_steps,mask_search_steps,reference_loop,side_by_side,evaluation,profile", "--out",
                    str(out)])
    sections = json.loads(out.read_text())["sections"]
    assert sections["environment"]["status"] == "failed"
    assert "RuntimeError: injected failure" in sections["environment"]["reason"]
    quick = gpu_check.QUICK
    for name, names in (("finetune_steps", ["fp32", "fp32_tf32", "bf16", "fp16_scaler", "fp32_b8", "fp32_tf32_b8",
                                             "bf16_b8"]),
                        ("mask_search_steps", ["fp32", "bf16", "fp32_b8", "bf16_b8"]),
                        ("reference_loop", ["fp32", "bf16", "fp32_b8", "bf16_b8"])):
        assert sections[name]["status"] == "ok", sections[name]
        assert list(sections[name]["variants"]) == names
        for variant, numbers in sections[name]["variants"].items():
            assert numbers["timed_steps"] == quick.timed_steps and numbers["steps_per_s"] > 0
            assert numbers["batch_size"] == (8 if variant.endswith("_b8") else 4) and numbers["max_length"] == 16
            assert numbers["mfu"] is None  # no card, no peak
    runs = sections["profile"]["runs"]
    assert list(runs) == ["finetune_bf16", "mask_search_bf16", "reference_bf16"]
    for numbers in runs.values():
        assert numbers["recorded_steps"] == 4 and numbers["host_step_ms"] > 0
    assert (tmp_path / "check_profile.txt").read_text().count("steps recorded)") == 3
    side = sections["side_by_side"]["batches"]
    assert list(side) == ["4", "8"] and len(side["4"]["rates"]["finetune_fp32"]) == gpu_check.ROUNDS
    medians = side["8"]["medians"]
    assert side["8"]["search_vs_finetune"] == round(medians["mask_search_bf16"] / medians["finetune_bf16"], 3)
    assert sections["mask_search_steps"]["variants"]["fp32"]["n_scores"] == 2 * (4 * 32 * 32 + 2 * 32 * 64)  # 2 layers: Q, K, V, O and the two FFN matrices
    bf16 = sections["evaluation"]["variants"]["bf16"]
    assert bf16["max_abs_prob_diff_vs_fp32"] == 0.0 and bf16["argmax_agreement_vs_fp32"] == 1.0


def test_unknown_section_is_refused():
    from maskbench.benchmarks import gpu_check

    with pytest.raises(SystemExit, match="unknown section"):
        gpu_check.main(["--sections", "environment,warp_drive"])


def test_a_recorded_check_renders_as_markdown_with_ratios_to_fp32():
    from maskbench.benchmarks.gpu_check import markdown

    report = {"commit": "abc1234", "total_seconds": 9.5, "sections": {
        "environment": {"status": "ok", "device_name": "GPU X"},
        "finetune_steps": {"status": "ok", "variants": {"fp32": {"steps_per_s": 10.0, "peak_memory_mib": 100.0},
                                                        "bf16": {"steps_per_s": 15.0, "peak_memory_mib": 80.0,
                                                                 "mfu": 0.0512},
                                                        "fp32_b128": {"steps_per_s": 3.0, "peak_memory_mib": 300.0},
                                                        "bf16_b128": {"steps_per_s": 6.0, "peak_memory_mib": 200.0}}},
        "evaluation": {"status": "skipped", "reason": "no CUDA device"},
        "resume_on_cuda": {"status": "ok", "equal": True}}}
    text = markdown(report, "g.json")
    assert text.startswith("On GPU X (`g.json`, commit `abc1234`, 9.5 s in all):")
    assert "| finetune_steps | fp32 | 10.0 steps/s | 1.00x | – | 100 |" in text
    assert "| finetune_steps | bf16 | 15.0 steps/s | 1.50x | 5.1 % | 80 |" in text
    assert "| finetune_steps | bf16_b128 | 6.0 steps/s | 2.00x | – | 200 |" in text  # against fp32 at its batch
    assert "evaluation |" not in text and "- `resume_on_cuda`: ok — resumed weights equal" in text


def test_model_flops_and_utilisation_by_hand(monkeypatch):
    """BERT-base's step: 85,054,464 encoder + 592,899 pooler and classifier parameters outside the embeddings; at 32 x
    128 tokens, 6 x 85,647,363 x 4,096 + 12 x 12 x 768 x 128 x 4,096 FLOPs; 10 steps/s on an H100's bf16 peak."""
    from transformers import BertConfig, BertForSequenceClassification

    from maskbench.benchmarks import gpu_check

    model = BertForSequenceClassification(BertConfig(num_labels=3))
    flops = gpu_check.model_flops_per_step(model, 32, 128)
    assert flops == 6 * 85_647_363 * 4_096 + 12 * 12 * 768 * 128 * 4_096
    monkeypatch.setattr(gpu_check, "peak_tflops", lambda variant: {"bf16": 989.4, "fp32_b128": 66.9}.get(variant))
    assert gpu_check.utilisation(1e12, 10.0, "bf16") == {"model_tflops_per_s": 10.0, "peak_tflops": 989.4,
                                                        "mfu": round(10 / 989.4, 4)}
    assert gpu_check.utilisation(1e12, 10.0, "fp16_scaler")["mfu"] is None
