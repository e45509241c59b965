"""The one atomic-write helper (maskbench.runtime.atomic_path) and the torch-free tables the workflow imports."""

import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from maskbench.runtime import atomic_path, atomic_write_text


def test_atomic_path_renames_on_success_with_a_plain_files_mode(tmp_path):
    target = tmp_path / "sub" / "table.csv"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp.name.startswith(".table.csv.") and tmp.suffix == ".csv"
        tmp.write_text("a,b\n")
        assert not target.exists()
    assert target.read_text() == "a,b\n"
    assert [p.name for p in target.parent.iterdir()] == ["table.csv"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()  # 0644 under the usual umask, not mkstemp's 0600


def test_atomic_path_leaves_nothing_and_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "summary.json"
    atomic_write_text(target, "old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_writers_go_through_atomic_path(tmp_path):
    from maskbench.masking.codec import read_mask_file, write_mask_file
    from maskbench.tracks.nlu.bias.probs import write_probs

    write_probs(tmp_path / "probs.parquet", ["a", "b"], np.eye(2), ["x", "y"], {"task": "t"})
    write_mask_file(tmp_path / "m.mask", {"layer": np.array([[True, False]])}, {"method": "test"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mask", "probs.parquet"]
    assert read_mask_file(tmp_path / "m.mask")[0]["layer"].tolist() == [[True, False]]
    assert {stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()} == {0o666 & ~_umask()}


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@pytest.mark.parametrize("sparsity", [0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.35, 0.05, 1 / 3, 0.99])
def test_level_name_is_the_folder_srnet_writes(sparsity, tmp_path):
    from maskbench.tracks.nlu.paths import level_name
    from maskbench.tracks.nlu.srnets.methods import level_dir

    assert level_dir(tmp_path, sparsity) == tmp_path / level_name(sparsity)


def test_what_the_workflow_imports_at_plan_time_does_not_import_torch():
    code = ("import sys, maskbench.workflow.workflow_config, maskbench.objectives.needs, maskbench.tracks.nlu.paths; "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
