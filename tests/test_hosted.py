"""What a learner meets on a rented or hosted GPU, with no GPU needed here: Nsight Compute refused
the counters (ERR_NVGPUCTRPERM), and a record of their own GPU made without profiles."""
import json
import shutil
import subprocess

from gemmlab import records, results
from gemmlab.research import measure_all as recorder

DENIED = ("==PROF== Connected to process 123\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission "
          "to access NVIDIA GPU Performance Counters on the target device 0.\n")


def test_counters_refused_are_said_once_and_not_asked_again(monkeypatch, capsys):
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, DENIED, "")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/ncu" if name == "ncu" else None)
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(recorder, "_COUNTERS_DENIED", [])
    monkeypatch.delenv("GEMMLAB_NO_NCU", raising=False)
    assert recorder.profile_stalls([("03_coalescing", {}), ("cublas", {})]) == []
    out = capsys.readouterr().out
    assert out.count("ERR_NVGPUCTRPERM") == 1 and "recorded H100 profiles" in out
    assert len(calls) == 1, "no more ncu runs once refused"


def test_profiles_come_from_the_newest_record_that_has_them(monkeypatch, tmp_path):
    shipped = records.latest()
    mine = {**shipped.data, "device": {**shipped.device, "name": "NVIDIA GeForce RTX 4090"},
            "date": "2099-01-01", "stalls": [], "ncu": {}}
    for path in records.DATA_DIR.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "nvidia-geforce-rtx-4090.json").write_text(json.dumps(mine))
    monkeypatch.setattr(records, "DATA_DIR", tmp_path)
    assert records.latest().device["name"] == "NVIDIA GeForce RTX 4090"
    assert results.record().device["name"] == shipped.device["name"], "the learner's record has no profiles"
    assert results.reference_for("NVIDIA GeForce RTX 4090") is None, "that GPU has a record of its own"


def test_an_installed_package_records_into_a_folder_of_the_users(monkeypatch, tmp_path):
    """From an installed package (no notebooks/ beside it) `record` writes to $XDG_DATA_HOME/gemmlab/records,
    never into site-packages, and gemmlab reads that folder beside the shipped records; in a clone of the
    course it writes gemmlab/data/, to be committed."""
    assert records.own_dir() == records.DATA_DIR, "this checkout records into gemmlab/data/"
    monkeypatch.delenv("GEMMLAB_RECORDS", raising=False)
    monkeypatch.setattr(records, "CHECKOUT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    mine = tmp_path / "share" / "gemmlab" / "records"
    assert records.own_dir() == mine
    shipped = records.latest()
    mine.mkdir(parents=True)
    (mine / "nvidia-geforce-rtx-4090.json").write_text(json.dumps(
        {**shipped.data, "device": {**shipped.device, "name": "NVIDIA GeForce RTX 4090"}, "date": "2099-01-01"}))
    names = {r.device["name"] for r in records.load_all()}
    assert {"NVIDIA GeForce RTX 4090", shipped.device["name"]} <= names
    monkeypatch.setenv("GEMMLAB_RECORDS", str(tmp_path / "elsewhere"))
    assert records.own_dir() == tmp_path / "elsewhere"
