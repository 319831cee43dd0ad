"""Nothing lost and no traceback for a user's mistake: the compile cache, records and the tuning
store survive damage and concurrent writers; every bad command line exits 2 with one line."""
import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gemmlab import compile as compiler
from gemmlab import files, records, tune
from gemmlab.__main__ import main
from gemmlab.spec import KERNEL_DIR

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("GEMMLAB_CACHE", str(path))
    compiler._reported.clear()
    return path


def _entry(cache: Path, suffix: str) -> Path:
    return next(cache.glob(f"01_naive-sm_90-*{suffix}"))


@pytest.mark.parametrize("damage", ["empty json", "missing field", "bad utf-8 log", "truncated cubin"])
def test_a_damaged_cache_entry_is_reported_once_and_rebuilt(damage, cache, capsys):
    good = compiler.compile_kernel("01")
    if damage == "empty json":
        _entry(cache, ".json").write_text("")
    elif damage == "missing field":
        _entry(cache, ".json").write_text(json.dumps({"registers": 32}))
    elif damage == "bad utf-8 log":
        _entry(cache, ".log").write_bytes(b"\xff\xfe\xfa")
    else:
        _entry(cache, ".cubin").write_bytes(good.cubin[:10][::-1])
    healed = compiler.compile_kernel("01")
    assert not healed.cached and healed.resources == good.resources
    assert compiler.compile_kernel("01").cached, "healed for good"
    err = capsys.readouterr().err
    assert err.count("damaged compile-cache entry") == 1 and str(cache) in err


def test_concurrent_writers_and_readers_never_see_a_part(cache):
    """Eight writers (each compiles anew and writes the entry) and readers, in threads of one process."""
    compiler.compile_kernel("01")
    jobs = [dict(use_cache=False)] * 8 + [dict(use_cache=True)] * 8
    with ThreadPoolExecutor(16) as pool:
        builds = list(pool.map(lambda kw: compiler.compile_kernel("01", **kw), jobs))
    assert len({b.resources for b in builds}) == 1
    assert not list(cache.glob(".*.tmp")), "no temporary file left behind"


def test_concurrent_processes_share_the_cache(cache):
    code = "from gemmlab.compile import compile_kernel as c; [c('01', use_cache=i % 2 == 0) for i in range(4)]"
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errors = [p.communicate()[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    assert compiler.compile_kernel("01").cached


@pytest.mark.parametrize("case", ["a file", "writable by others", "read-only"])
def test_an_unusable_cache_folder_is_named_with_the_fix(case, cache):
    if case == "a file":
        cache.parent.mkdir(exist_ok=True)
        cache.write_text("")
    else:
        cache.mkdir(parents=True)
        cache.chmod(0o777 if case == "writable by others" else 0o500)
    if case == "read-only" and os.access(cache, os.W_OK):     # root may write anyway
        pytest.skip("this user writes to read-only folders (root)")
    with pytest.raises(files.UnusableDirectory, match="GEMMLAB_CACHE") as exc:
        compiler.compile_kernel("01")
    assert str(cache) in str(exc.value)
    assert main(["compile", "01"]) == 2


def test_writes_never_follow_a_planted_symlink(cache, tmp_path):
    compiler.compile_kernel("01")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    cubin = _entry(cache, ".cubin")
    for name in (cubin.with_suffix(f".tmp{os.getpid()}"), cubin.parent / f".{cubin.name}.tmp"):
        name.symlink_to(victim)                       # the old predictable names, and a guess at the new
    compiler.compile_kernel("01", use_cache=False)
    assert victim.read_text() == "precious"


def test_write_atomic_leaves_the_old_file_whole_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "f.json"
    path.write_text("old")

    def broken(fd, *a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fdopen", broken)
    with pytest.raises(OSError):
        files.write_atomic(path, "new")
    assert path.read_text() == "old" and list(tmp_path.iterdir()) == [path]


def test_write_atomic_gives_a_new_file_a_readable_mode_and_keeps_an_old_ones(tmp_path):
    fresh, kept = tmp_path / "record.json", tmp_path / "private.json"
    files.write_atomic(fresh, "{}")          # the H200 record of 2026-11-24 came out 0600 (mkstemp's mode)
    kept.write_text("old")
    kept.chmod(0o600)
    files.write_atomic(kept, "new")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644 and stat.S_IMODE(kept.stat().st_mode) == 0o600


@pytest.mark.parametrize("content", ["", "{", "{}", "[]", '{"date": "x"}', b"\xff\xfe"])
def test_a_damaged_record_is_left_out_and_named(content, tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    data.mkdir()
    good = records.latest().path
    (data / good.name).write_bytes(good.read_bytes())
    bad = data / "zz-broken.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.setattr(records, "DATA_DIR", data)
    assert records.latest().path.name == good.name, "the good record still serves"
    assert bad in records.damaged()
    err = capsys.readouterr().err
    assert str(bad) in err and "git checkout" in err
    (data / good.name).unlink()
    with pytest.raises(records.NotRecorded, match="zz-broken.json is damaged"):
        records.latest()


def test_a_missing_kernel_file_makes_only_its_own_results_stale(monkeypatch):
    from gemmlab import registry
    spec = registry.get("03")
    monkeypatch.setattr(type(spec), "path", property(lambda self: Path("/nonexistent.cu") if self.name == spec.name
                                                     else KERNEL_DIR / f"{self.name}.cu"))
    rec = records.latest()
    assert rec.stale_kernels() == ["03_coalescing"]
    assert rec.results("05_register_tiling")


def test_a_damaged_tuning_store_is_moved_aside_not_lost(cache, capsys):
    cache.mkdir(parents=True, mode=0o700)
    tune.store_path().write_text("{ truncated")
    tune.remember("GPU", "03", (4096, 4096, 4096), {"params": {"TILE": 32, "OUTPUTS": 4}, "gflops": 1.0,
                                                     "cublas_gflops": 2.0})
    assert json.loads(tune.store_path().read_text())["GPU"]["03_coalescing"]
    aside = list(cache.glob("tuned.damaged-*.json"))
    assert len(aside) == 1 and aside[0].read_text() == "{ truncated"
    assert str(aside[0]) in capsys.readouterr().err


BAD = [
    ["compile", "03", "--arch", "sm_9"], ["compile", "03", "--arch", "compute_90"], ["compile", "03", "--arch", "SM_90"],
    ["compile", "03", "--arch", "sm_61"], ["compile", "09", "--arch", "sm_75"], ["archs", "--arch", "sm_95"],
    ["sass", "nope"], ["sass", "03", "-D", "TILE=48"], ["sass", "03", "--arch", "sm_9"],
    ["compile", "0"], ["compile", "nope"], ["compile", "03", "-D", "TILE=abc"], ["compile", "03", "-D", "TILE"],
    ["compile", "03", "-D", "TILE=32", "-D", "TILE=16"], ["compile", "03", "-D", "=16"],
    ["compile", "03", "-D", "BK=8"], ["check", "99"],
    ["bench", "03", "--size", "0", "5", "5"], ["bench", "03", "--size", "-1", "5", "5"], ["bench", "03", "--reps", "0"],
    ["run", "03", "--size", "5", "x", "5"],
    ["tune", "10"], ["tune", "03", "--only", "TILE=x"], ["tune", "03", "--only", "TILE=48"], ["tune", "nope"],
]


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_every_bad_command_line_exits_2_with_one_line_and_no_traceback(argv):
    done = subprocess.run([sys.executable, "-m", "gemmlab", *argv], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stderr.strip(), "says what was wrong"


def test_chapter_numbers_and_prefixes_find_one_kernel_or_list_the_matches():
    from gemmlab import registry
    assert registry.get("1").name == "01_naive" and registry.get("10").name == "10_issue_rate"
    assert registry.get("11").name == "11_last_wave" and registry.get("03_co").name == "03_coalescing"
    with pytest.raises(registry.UnknownKernel, match="matches several kernels: 01_naive"):
        registry.get("0")
    assert not str(registry.UnknownKernel("x")).startswith("'"), "not quoted like a KeyError"


def test_lessons_answer_a_learners_mistake_with_the_clis_message(capsys):
    import gemmlab.lessons as gl
    gl.show_unroll_study("03")              # 03 has no UNROLL
    gl.show_compile_report("nope")
    gl.show_tunable("03", "NOPE")
    gl.show_vs_cublas("03", 4096, TILE=32.9)
    gl.check("99")
    out = capsys.readouterr().out.splitlines()
    assert out == ["03_coalescing: rule 'known-parameter' violated: UNROLL is not a tunable of this kernel; it has "
                   "TILE, OUTPUTS", *out[1:]] and len(out) == 5
    assert out[1].startswith("no kernel 'nope'") and "NOPE is not a tunable" in out[2]
    assert "TILE=32.9 is not offered" in out[3] and out[4].startswith("no kernel '99'")
