"""A record is tied to a kernel's code, not its bytes: comments and white space do not count."""
import shutil

import pytest

from gemmlab import identity, records, registry, spec as spec_module

NAIVE = registry.get("01").path.read_text()


def test_comments_and_white_space_do_not_change_the_identity():
    edited = ("// a new first line\n" + NAIVE.replace("\n", "\n\n", 3)
              .replace("acc += A", "acc  +=   A /* a note */"))
    assert edited != NAIVE
    assert identity.code_tokens(edited) == identity.code_tokens(NAIVE)


def test_code_changes_do_change_it():
    for change in (NAIVE.replace("acc += A", "acc -= A"), NAIVE.replace("#define BLOCK_M 32", "#define BLOCK_M 64"),
                   NAIVE + "\n#define EXTRA 1\n"):
        assert change != NAIVE and identity.code_tokens(change) != identity.code_tokens(NAIVE)


def test_strings_and_directives_keep_their_meaning():
    assert identity.code_tokens('asm("a // b");') != identity.code_tokens('asm("a");')
    assert identity.code_tokens("#define A 1\n#define B 2\n") != identity.code_tokens("#define A 1 #define B 2\n")
    assert identity.code_tokens("x = a++ + b;") != identity.code_tokens("x = a + ++b;")


@pytest.fixture
def kernel_copy(tmp_path, monkeypatch):
    """Every kernel file and the header some include (ptx.cuh) copied aside, and the registry pointed at
    the copies."""
    for path in [spec.path for spec in registry.KERNELS.values()] + sorted(spec_module.KERNEL_DIR.glob("*.cuh")):
        shutil.copy(path, tmp_path / path.name)
    monkeypatch.setattr(spec_module, "KERNEL_DIR", tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", list(registry.KERNELS))
def test_a_comment_line_added_to_a_kernel_keeps_its_record_fresh(kernel_copy, name):
    path = kernel_copy / f"{name}.cu"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3] + ["// a comment added after recording\n"] + lines[3:]))
    assert name not in records.latest().stale_kernels()


@pytest.mark.parametrize("name", list(registry.KERNELS))
def test_a_changed_statement_makes_its_record_stale(kernel_copy, name):
    path = kernel_copy / f"{name}.cu"
    source = path.read_text()
    body = source.index("{", source.index("sgemm("))
    changed = source[:body + 1] + "\n    (void)M;" + source[body + 1:]   # one more statement
    assert changed != source
    path.write_text(changed)
    record = records.latest()
    assert name in record.stale_kernels()
    with pytest.raises(records.StaleRecord, match="older version"):
        record.results(name)
