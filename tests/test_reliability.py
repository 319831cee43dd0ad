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


def _in_process(argv, capsys) -> tuple[int, str, str]:
    """`python -m gemmlab ARGV` run in this process (the module runs main and exits with what it returns):
    exit status, output, errors. An exception main does not turn into a message fails the test itself."""
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exc:           # argparse's usage errors
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_the_module_exits_with_mains_status_and_no_traceback():
    done = subprocess.run([sys.executable, "-m", "gemmlab", *BAD[0]], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.strip() and "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("argv", BAD, ids=[" ".join(a) for a in BAD])
def test_every_bad_command_line_exits_2_with_one_line_and_no_traceback(argv, capsys):
    status, out, err = _in_process(argv, capsys)
    assert status == 2, (out, err)
    assert "Traceback" not in err + out
    assert err.strip(), "says what was wrong"


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


# --- issue 32, part 3: a user's mistake or a damaged file, named in one line, exit 2, no traceback ----------

@pytest.fixture
def refused(monkeypatch, capsys):
    """Runs `python -m gemmlab ARGV` (main, in this process, from the checkout, with `env` set); asserts exit status
    2, no traceback, and a message naming each of `names`; returns the message."""
    def run(argv, *names, env=None) -> str:
        monkeypatch.chdir(ROOT)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        status, out, err = _in_process(argv, capsys)
        assert status == 2, (argv, out, err)
        assert "Traceback" not in err + out, err
        for name in names:
            assert str(name) in err, (argv, name, err)
        return err
    return run


@pytest.mark.parametrize("argv, named", [
    (["compile", "03", "-D", "TILE=²"], "TILE=²"),            # isdigit takes '²', int does not
    (["compile", "03", "-D", "TILE=--32"], "TILE=--32"),
    (["compile", "03", "-D", "TILE=3.5"], "TILE=3.5"),
    (["tune", "03", "--only", "TILE=²"], "TILE=²"),
    (["tune", "03", "--only", "=32"], "'=32'"),
    (["tune", "03", "--only", "TILE=16", "--only", "TILE=32"], "TILE is given twice"),
    (["bench", "03", "--size", "²", "2", "2"], "'²' is not a whole number"),
    (["run", "03", "--size", "1e3", "2", "2"], "'1e3' is not a whole number"),
    (["plan", "1", "2", "2.5"], "argument K: '2.5'"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_malformed_number_is_named(argv, named, capsys):
    status, out, err = _in_process(argv, capsys)
    assert status == 2 and named in err and "Traceback" not in err + out, (argv, err)
    assert len(err.strip().splitlines()) == 1 or err.startswith("usage:"), "one line, or argparse's usage and one"


def _plain(tmp_path, name: str, content: bytes | None) -> Path:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("chapter", ["05", "14"])
@pytest.mark.parametrize("kind", ["a folder", "a binary file", "no such file", "an empty name", "unreadable"])
def test_check_names_a_file_it_cannot_check(kind, chapter, tmp_path, refused):
    if kind == "a folder":
        path, said = tmp_path, "is a folder"
    elif kind == "a binary file":
        path, said = _plain(tmp_path, "ls", Path(sys.executable).read_bytes()[:4096]), "is not a text file"
    elif kind == "no such file":
        path, said = tmp_path / "nowhere.cu", "no file at"
    elif kind == "an empty name":
        path, said = "", "--file ''"
    else:
        path, said = _plain(tmp_path, "mine.cu", b"// mine\n"), "cannot be read"
        path.chmod(0)
        if os.access(path, os.R_OK):
            pytest.skip("this user reads files without read permission (root)")
    refused(["check", chapter, "--file", path], said, str(path), "--start")


@pytest.mark.parametrize("argv", [["check", "05"], ["check", "05", "--start"], ["check", "05", "--starter"],
                                  ["check", "05", "--fresh"], ["check", "14"]], ids=" ".join)
def test_a_workspace_that_is_a_file_is_named_with_the_fix(argv, tmp_path, refused):
    place = _plain(tmp_path, "workspace", b"")
    refused(argv, str(place), "GEMMLAB_WORKSPACE", env={"GEMMLAB_WORKSPACE": str(place)})


@pytest.mark.parametrize("argv", [["compile", "03"], ["sass", "03"], ["archs", "05", "-D", "BM=64"],
                                  ["check", "05", "--solution"], ["plan", "64", "64", "64", "--kernel", "05"],
                                  ["fit", "--out", "{tmp}/model.json"]], ids=" ".join)
def test_a_home_gemmlab_cannot_write_to_names_the_cache_and_the_fix(argv, tmp_path):
    """HOME unwritable (here /proc, where even root cannot make a folder), GEMMLAB_CACHE and XDG_CACHE_HOME
    unset: the compile cache would be ~/.cache/gemmlab."""
    env = {k: v for k, v in os.environ.items() if k not in ("GEMMLAB_CACHE", "XDG_CACHE_HOME")}
    done = subprocess.run([sys.executable, "-m", "gemmlab", *(a.format(tmp=tmp_path) for a in argv)],
                          capture_output=True, text=True, cwd=ROOT, env={**env, "HOME": "/proc"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "/proc/.cache/gemmlab" in done.stderr and "set GEMMLAB_CACHE" in done.stderr


@pytest.mark.parametrize("kind", ["a folder", "an empty path", "a missing folder", "a file as its folder",
                                  "a folder it cannot write in", "a device"])
def test_fit_checks_where_it_writes_before_it_works(kind, tmp_path, monkeypatch, capsys):
    from gemmlab.research import fit
    out, said = {"a folder": (str(tmp_path), "is a folder"), "an empty path": ("", "--out ''"),
                 "a missing folder": (str(tmp_path / "no" / "m.json"), "does not exist"),
                 "a file as its folder": (str(_plain(tmp_path, "f", b"") / "m.json"), "is not a folder"),
                 "a folder it cannot write in": ("/proc/m.json", "cannot write in the folder /proc"),
                 "a device": ("/dev/null", "is not a plain file")}[kind]
    monkeypatch.setattr(fit, "fit", lambda *a, **k: pytest.fail("the fit started before --out was checked"))
    assert main(["fit", "--out", out]) == 2
    err = capsys.readouterr().err
    assert said in err and (out or "''") in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("field, value, said", [
    ("sm_count", None, "device.sm_count is missing"), ("sm_count", 0, "device.sm_count must be a whole number"),
    ("arch", "sm_99", "device.arch: gemmlab has no limits for architecture 'sm_99'"),
    ("dram_gbs", "3352", "device.dram_gbs must be a number above 0"),
    ("compute_capability", [9], "device.compute_capability"),
])
def test_a_record_with_a_damaged_field_names_the_file_and_the_field(field, value, said, tmp_path, monkeypatch,
                                                                    capsys):
    data = json.loads(records.latest().path.read_text())
    if value is None:
        del data["device"][field]
    else:
        data["device"][field] = value
    folder = tmp_path / "data"
    folder.mkdir()
    bad = folder / "damaged.json"
    bad.write_text(json.dumps(data))
    monkeypatch.setattr(records, "DATA_DIR", folder)
    monkeypatch.delenv("GEMMLAB_RECORDS", raising=False)
    with pytest.raises(records.NotRecorded, match=said.replace("(", r"\(")) as exc:
        records.latest()
    assert str(bad) in str(exc.value)
    capsys.readouterr()
    assert main(["fit", "--out", str(tmp_path / "m.json")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert str(bad) in last and said in last and "record" in last


@pytest.mark.parametrize("damage, said", [
    (lambda c: c["params"].update(BOGUS=3), "BOGUS is not a tunable"),
    (lambda c: c["params"].update(TILE=48), "TILE=48 is not offered"),
    (lambda c: c.update(kernel="99_nothing"), "names no kernel"),
    (lambda c: c["params"].pop("TILE"), "leaves out TILE"),
    (lambda c: c.update(registers="32"), "registers='32'"),
    (lambda c: c.update(per_step_us=None), "per_step_us=None"),
], ids=["unknown tunable", "illegal value", "unknown kernel", "a tunable missing", "wrong type", "missing figure"])
def test_a_fitted_candidate_it_cannot_use_is_named(damage, said, tmp_path):
    from gemmlab.library import time_model
    shipped = sorted(time_model.FITTED_DIR.glob("*.json"))[0]
    data = json.loads(shipped.read_text())
    kernel = data["candidates"][0]["kernel"]
    assert "TILE" in data["candidates"][0]["params"], "the damage below assumes chapter 02's tunables"
    damage(data["candidates"][0])
    path = tmp_path / shipped.name
    path.write_text(json.dumps(data))
    with pytest.raises(time_model.NotFitted, match="candidate 0") as exc:
        time_model.load(path)
    assert said in str(exc.value) and str(path) in str(exc.value) and "python -m gemmlab fit" in str(exc.value)
    assert kernel in str(exc.value) or "99_nothing" in str(exc.value)


def _counts(**change) -> str:
    good = {"registers": 32, "static_smem": 0, "stack_frame": 0, "spill_stores": 0, "spill_loads": 0}
    return json.dumps({**good, **change})


@pytest.mark.parametrize("damage", ["truncated json", "empty json", "json of strings", "json of bools",
                                    "a negative count", "counts of another build", "json a list",
                                    "cubin missing", "log missing", "empty cubin", "cubin cut after its header",
                                    "cubin sections overwritten", "cubin section table past its end"])
def test_every_damaged_cache_entry_is_deleted_and_rebuilt(damage, cache, capsys):
    good = compiler.compile_kernel("01")
    res, log, cubin = (_entry(cache, s) for s in (".json", ".log", ".cubin"))
    image = cubin.read_bytes()
    r = good.resources
    {"truncated json": lambda: res.write_text(res.read_text()[:20]),
     "empty json": lambda: res.write_text(""),
     "json of strings": lambda: res.write_text(json.dumps({k: str(v) for k, v in json.loads(res.read_text()).items()})),
     "json of bools": lambda: res.write_text(_counts(registers=True)),
     "a negative count": lambda: res.write_text(_counts(registers=-1)),
     "counts of another build": lambda: res.write_text(_counts(registers=r.registers + 8,
                                                               static_smem=r.static_smem)),
     "json a list": lambda: res.write_text("[32, 0, 0, 0, 0]"),
     "cubin missing": cubin.unlink,
     "log missing": log.unlink,
     "empty cubin": lambda: cubin.write_bytes(b""),
     "cubin cut after its header": lambda: cubin.write_bytes(image[:64]),
     "cubin sections overwritten": lambda: cubin.write_bytes(image[:64] + b"\xff" * (len(image) - 64)),
     "cubin section table past its end": lambda: cubin.write_bytes(image[:len(image) // 2]),
     }[damage]()
    assert compiler._read_entry(cubin, log, res) is None, "refused"
    assert not any(p.exists() for p in (res, log, cubin)), "deleted"
    healed = compiler.compile_kernel("01")
    assert not healed.cached and healed.resources == good.resources and healed.cubin == image
    assert compiler.compile_kernel("01").cached, "healed for good"
    err = capsys.readouterr().err
    assert err.count("damaged compile-cache entry") == 1 and str(cache) in err


def test_a_cubin_damaged_past_its_header_is_refused_by_its_reader():
    from gemmlab import cubin
    image = compiler.compile_kernel("01").cubin
    assert cubin.resources(image)["registers"] > 0
    for broken in (image[:64], image[:len(image) // 2], image[:64] + bytes(len(image) - 64)):
        with pytest.raises(ValueError):
            cubin.resources(broken)


@pytest.mark.parametrize("A, B, named", [
    ("numpy64", "numpy64", "A: numpy.ndarray (float64, 2 x 2)"), ("list", "list", "A: list, B: list"),
    ("numpy3d", "numpy32", "A: numpy.ndarray (float32, 3-D, 2 x 2 x 2)"),
])
def test_matmul_without_a_gpu_says_what_it_takes_and_what_it_was_given(A, B, named, monkeypatch):
    import numpy as np

    import gemmlab
    from gemmlab import device
    made = {"numpy64": np.ones((2, 2)), "numpy32": np.ones((2, 2), np.float32), "list": [[1.0, 2.0], [3.0, 4.0]],
            "numpy3d": np.ones((2, 2, 2), np.float32)}

    def no_gpu():
        raise RuntimeError("CuPy is not installed or does not load (ModuleNotFoundError); timings come from "
                           "recorded runs")
    monkeypatch.setattr(device, "cupy", no_gpu)
    with pytest.raises(RuntimeError) as exc:
        gemmlab.matmul(made[A], made[B])
    said = str(exc.value)
    assert named in said and "cupy.asarray(a, dtype=cupy.float32)" in said and "NVIDIA GPU" in said
    assert "CuPy is not installed" in said and "timings come from recorded runs" not in said


def test_matmul_with_cupy_names_the_type_it_was_given():
    import numpy as np

    from gemmlab import library

    class FakeCupy:                       # what _check asks of CuPy: its array type and float32
        class ndarray:
            pass
        float32 = np.float32
    for given, named in ((np.ones((3, 4)), "numpy.ndarray (float64, 3 x 4)"), ([1.0], "list"), (3, "int")):
        with pytest.raises(TypeError, match="cupy.ndarray") as exc:
            library._check("A", given, FakeCupy)
        assert named in str(exc.value) and "cupy.asarray(A, dtype=cupy.float32)" in str(exc.value)


@pytest.mark.parametrize("sizes, named", [((1.5, 2, 3), "M"), ((True, 2, 3), "M"), ((2, 2.0, 3), "N"),
                                          ((2, 2, "3"), "K"), ((2, 2, 3, 3.0), "lda"), ((2, 2, 3, 0, 0, None), "ldc")])
def test_plan_takes_whole_numbers_only(sizes, named):
    import gemmlab
    from gemmlab.library import dispatch
    from gemmlab.spec import BadProblem
    gemmlab.matmul.plan(1, 2, 3)                # cached: plan(True, 2, 3) must not find its answer
    for plan in (dispatch.plan, gemmlab.matmul.plan):
        with pytest.raises(BadProblem, match=f"^{named} must be a whole number"):
            plan(*sizes)


def test_a_size_past_32_bits_is_named_as_the_user_gave_it(refused):
    done = subprocess.run([sys.executable, "-m", "gemmlab", "plan", "1", "2147483647", "1"], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0 and "ldb" not in done.stderr, "B's rows are not padded past 32 bits"
    refused(["plan", "1", "2147483648", "1"], "N=2147483648", "32-bit")


@pytest.mark.parametrize("argv, named", [
    (["archs", "05", "-D", "BM=7"], "rule 'BM-legal-values'"), (["archs", "05", "-D", "NOPE=1"], "NOPE"),
    (["archs", "-D", "BM=64"], "archs 05 -D BM=64"),
])
def test_archs_refuses_an_illegal_define_by_its_rule(argv, named, refused):
    refused(argv, named)


# Further mistakes of a reader's own (issue 32): each exits 2 naming what was wrong.
OWN = [
    (["plan", "64", "64", "64", "--kernel", ""], "--kernel ''"),
    (["check", "05", "--solution", "--file", "mine.cu"], "--file"),
    (["check", "99", "--file", "/"], "no kernel '99'"),
    (["bench", "nope"], "no kernel 'nope'"),
    (["bench", "03", "-D", "TILE=7"], "TILE=7"),
    (["run", "03", "-D", "X=1"], "X is not a tunable"),
    (["sweep", "nope"], "no kernel 'nope'"),
    (["record", "nope"], "no kernel 'nope'"),
    (["plan", "64", "64", "64", "--ld", "64", "-1", "64"], "-1"),
    (["compile", "03", "--arch", ""], "architecture ''"),
    (["plan", "1", "1", "99999999999999999999"], "K=99999999999999999999"),
]


@pytest.mark.parametrize("argv, named", OWN, ids=[" ".join(a) for a, _ in OWN])
def test_more_mistakes_are_named(argv, named, refused):
    refused(argv, named)


def _descendants(pid: int) -> set[int]:
    """Every living process below `pid` (from /proc: each process's parent)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, todo = set(), [pid]
    while todo:
        above = todo.pop()
        below = {p for p, parent in parents.items() if parent == above}
        todo += below - found
        found |= below
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_ctrl_c_during_fit_stops_every_worker_and_says_one_line(tmp_path):
    import signal
    import time
    env = {**os.environ, "GEMMLAB_CACHE": str(tmp_path / "cache")}    # empty: the fit compiles, side by side
    # a Ctrl-C reaches the child even where this run ignores it (a job started in the background, by a shell
    # without job control, ignores SIGINT, and so would every process it starts)
    child = subprocess.Popen([sys.executable, "-m", "gemmlab", "fit", "--out", str(tmp_path / "m.json")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        start = time.monotonic()
        while len(_descendants(child.pid)) < 2 and time.monotonic() - start < 20 and child.poll() is None:
            time.sleep(0.1)                   # the compile children
        time.sleep(1.0)
        workers = _descendants(child.pid)
        assert len(workers) >= 2, "the compile children had started"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
    finally:
        child.kill()
    assert child.returncode == 130 and err.strip() == "interrupted", err
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in workers if _alive(p)], "no compile worker (or tool it ran) is left behind"
    assert not (tmp_path / "m.json").exists()


def test_a_ctrl_c_while_the_compile_children_start_stops_them_all(tmp_path, monkeypatch):
    """A Ctrl-C the moment a compile child has started is raised in the parent with one line, and no child, nor
    any build, is left running: the compiles were stopped, not run to the end."""
    import signal
    import threading
    from gemmlab import compile_aside
    monkeypatch.setenv("GEMMLAB_CACHE", str(tmp_path / "cache"))
    started = []
    real = compile_aside.subprocess.Popen

    def popen_then_ctrl_c(command, *args, **kwargs):
        child = real(command, *args, **kwargs)
        if compile_aside.__name__ not in command:      # another program (ctypes looking a library up)
            return child
        started.append(child)
        # sent to the main thread, as a command line's only thread gets a terminal's (sent to the process, it may
        # land on another thread of this test runner, pytest-xdist's, and surface after precompile has returned)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return child
    monkeypatch.setattr(compile_aside.subprocess, "Popen", popen_then_ctrl_c)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)   # where this run ignores Ctrl-C too
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    jobs = [("01_naive", {"BLOCK_M": b}, "sm_90") for b in (32, 64)]
    try:
        with pytest.raises(KeyboardInterrupt, match="compiling stopped"):
            compile_aside.precompile(jobs)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert started and all(child.poll() is not None for child in started), "no compile child is left running"
    assert not list((tmp_path / "cache").rglob("*.cubin*")), "the compiles were stopped, not run to the end"
