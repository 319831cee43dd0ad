"""Timings carried across a change of a kernel's code (research/carry.py), rows that say which code they timed
(Record.results), and `record KERNEL --only` replacing a slice of a kernel's configurations."""
import json
import shutil

import pytest

from gemmlab import __main__ as cli, identity, records, registry
from gemmlab import spec as spec_module
from gemmlab.research import carry, measure_all

NAIVE = "01_naive"


@pytest.fixture
def kernel_copy(tmp_path, monkeypatch):
    """The kernels folder copied aside (old/ keeps the code as it was), the registry pointed at the copy."""
    now, old = tmp_path / "now", tmp_path / "old"
    for folder in (now, old):
        folder.mkdir()
        for path in [s.path for s in registry.KERNELS.values()] + sorted(spec_module.KERNEL_DIR.glob("*.cuh")):
            shutil.copy(path, folder / path.name)
    monkeypatch.setattr(spec_module, "KERNEL_DIR", now)
    return now, old


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_build_that_did_not_change_carries_its_rows_and_one_that_did_leaves_them_stale(kernel_copy):
    now, old = kernel_copy
    spec = registry.get(NAIVE)
    then = identity.code_hash(old / f"{NAIVE}.cu")
    row = {"kernel": NAIVE, "params": {"BLOCK_M": 32}, "M": 64, "N": 64, "K": 64, "gflops": 1.0}

    # a define no line reads: the code's identity changes, its machine code does not
    _edit(now / f"{NAIVE}.cu", "#ifndef BLOCK_N", "#define UNREAD_BY_ANY_LINE 1\n#ifndef BLOCK_N")
    carrier = carry.Carrier(spec, old / f"{NAIVE}.cu", "sm_90")
    assert carrier.now != then
    carried = carrier.row(row, then)
    assert carried["source"] == carrier.now and carried["params"] == spec.resolve({"BLOCK_M": 32})
    other = {**row, "kernel": "02_smem_tiling"}
    assert carrier.row(other, then) == other                   # another kernel's row: left as it is
    assert carrier.row(row, "some other code") == row          # timed on code it cannot compare: left as it is

    # a statement that computes something else: its rows stay stale, named as the kernel names them now
    _edit(now / f"{NAIVE}.cu", "acc += A", "acc -= A")
    changed = carry.Carrier(spec, old / f"{NAIVE}.cu", "sm_90")
    stale = changed.row(row, then)
    assert stale["source"] == then and stale["params"] == spec.resolve({"BLOCK_M": 32})
    assert (changed.carried, changed.left) == (0, 1)


def test_the_record_reads_the_rows_of_the_code_now_and_refuses_a_kernel_with_none(kernel_copy):
    now, _ = kernel_copy
    record = records.latest()
    rows = record.results(NAIVE)
    _edit(now / f"{NAIVE}.cu", "acc += A", "acc -= A")
    code = identity.code_hash(now / f"{NAIVE}.cu")
    data = json.loads(json.dumps(record.data))
    rec = records.Record(record.path, data)
    with pytest.raises(records.StaleRecord, match="older version"):
        rec.results(NAIVE)
    mine = [r for r in data["results"] if r["kernel"] == NAIVE]
    mine[0]["source"] = code                    # one row timed again on the code now
    assert rec.results(NAIVE) == [mine[0]] and len(rows) > 1


def _naive_rows(data, source=None):
    return [r for r in data["results"] if r["kernel"] == NAIVE and (source is None or r.get("source") == source)]


def test_a_slice_timed_anew_replaces_its_rows_and_the_record_settles_once_all_are_of_the_code_now(kernel_copy):
    now, _ = kernel_copy
    data = json.loads(json.dumps(records.latest().data))
    before = _naive_rows(data)
    _edit(now / f"{NAIVE}.cu", "acc += A", "acc -= A")
    code = identity.code_hash(now / f"{NAIVE}.cu")
    spec = registry.get(NAIVE)
    one = sorted({r["params"]["BLOCK_M"] for r in before})[0]
    new = [{**r, "gflops": 7.0} for r in before if spec.resolve(r["params"])["BLOCK_M"] == one]
    measure_all._replace_slice(data, {NAIVE}, {"BLOCK_M": {one}}, new)
    assert len(_naive_rows(data)) == len(before)
    assert all(r["gflops"] == 7.0 and r["source"] == code for r in _naive_rows(data)
               if r["params"]["BLOCK_M"] == one)
    assert data["sources"][NAIVE] != code       # the other rows are still of the old code

    rest = [{**r, "gflops": 8.0} for r in before if spec.resolve(r["params"])["BLOCK_M"] != one]
    measure_all._replace_slice(data, {NAIVE}, {"BLOCK_M": {r["params"]["BLOCK_M"] for r in rest}}, rest)
    assert data["sources"][NAIVE] == code and not any("source" in r for r in _naive_rows(data))


def test_record_only_names_the_kernels_and_their_values_before_any_gpu_work(capsys):
    assert cli.main(["record", "--only", "SIDE=2"]) == 2
    assert "record KERNEL --only" in capsys.readouterr().err
    assert cli.main(["record", "12", "--only", "SIDE=7"]) == 2
    assert "SIDE=[7] is not offered" in capsys.readouterr().err
    assert cli.main(["record", "12", "--only", "SIDE=0", "--only", "ACROSS=4"]) == 2
    assert "no configuration of 12_skinny" in capsys.readouterr().err
