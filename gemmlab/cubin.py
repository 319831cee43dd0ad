"""Read a kernel's resources straight from its cubin (an ELF file), no GPU needed.

Why not the ptxas report in NVRTC's log: on the H100 box (NVRTC 13.0.88) that report is
missing from the log in a good share of otherwise identical compiles, so the cubin, which is
always the same, is the source of truth. Where the log does carry the report, a test checks
that the two agree.
"""
from __future__ import annotations

import struct

EIATTR_REGCOUNT = 0x2F
EIATTR_FRAME_SIZE = 0x11
RESERVED_SMEM = 1024  # sm_90 keeps 1 KiB of every block's shared memory for the system
SHT_NOBITS = 8        # a section that takes no bytes of the file (shared memory's): its size is not in it


def sections(elf: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (offset, size, info) for every section of a 64-bit little-endian ELF."""
    if len(elf) < 0x40 or elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    # every header, and every section's bytes, inside the file: a cubin cut short or overwritten is refused
    # here (ValueError), not misread
    if shentsize < 0x40 or not shnum or shstrndx >= shnum or shoff + shnum * shentsize > len(elf):
        raise ValueError("the cubin's section headers lie past its end (damaged or cut short)")
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    for h in headers:
        if h[1] != SHT_NOBITS and h[4] + h[5] > len(elf):
            raise ValueError("a section of the cubin lies past its end (damaged or cut short)")
    strtab, strsize = headers[shstrndx][4], headers[shstrndx][5]
    out = {}
    for h in headers:
        start = strtab + h[0]
        end = elf.find(b"\0", start, strtab + strsize)
        if h[0] >= strsize or end < 0:
            raise ValueError("a section name of the cubin lies outside its string table (damaged)")
        try:
            name = elf[start:end].decode()
        except UnicodeDecodeError:
            raise ValueError("a section name of the cubin is not text (damaged)") from None
        out[name] = (h[4], h[5], h[7])
    return out


def target(elf: bytes, function: str = "sgemm") -> str:
    """The architecture whose SASS the cubin holds ("sm_90"), from the ELF header's flags, as nvdisasm
    reads it: CUDA 13's cubins (ELF ABI version 8 and later) keep the SM number in bits 8-15 of
    e_flags, CUDA 12's in bits 0-7. ValueError for an ELF with no code of `function` (PTX only)."""
    if f".text.{function}" not in sections(elf):
        raise ValueError(f"the cubin holds no machine code for {function}")
    flags, = struct.unpack_from("<I", elf, 0x30)
    return f"sm_{(flags >> 8) & 0xFF if elf[8] >= 8 else flags & 0xFF}"


def _attributes(elf: bytes, offset: int, size: int):
    """The (attribute, payload) records of a .nv.info section (format, attr, then a value)."""
    i, end = offset, offset + size
    if end > len(elf):
        raise ValueError("the cubin's .nv.info section lies past its end (damaged)")
    while i + 1 < end:
        fmt, attr = elf[i], elf[i + 1]
        i += 2
        if fmt == 0x04:      # EIFMT_SVAL: u16 size, then payload
            if i + 2 > end:
                raise ValueError("the cubin's .nv.info section ends inside an attribute (damaged)")
            n, = struct.unpack_from("<H", elf, i)
            yield attr, elf[i + 2:i + 2 + n]
            i += 2 + n
        elif fmt == 0x03:    # EIFMT_HVAL: u16 value
            yield attr, elf[i:i + 2]
            i += 2
        elif fmt == 0x02:    # EIFMT_BVAL: u8 value
            yield attr, elf[i:i + 1]
            i += 1
        else:                # EIFMT_NVAL: no value
            yield attr, b""


def resources(elf: bytes, function: str = "sgemm") -> dict[str, int]:
    secs = sections(elf)
    regs = frame = 0
    if ".nv.info" in secs:
        off, size, _ = secs[".nv.info"]
        for attr, payload in _attributes(elf, off, size):
            if attr == EIATTR_REGCOUNT and len(payload) == 8:
                regs = struct.unpack("<II", payload)[1]
            elif attr == EIATTR_FRAME_SIZE and len(payload) == 8:
                frame = struct.unpack("<II", payload)[1]
    smem = secs.get(f".nv.shared.{function}", (0, 0, 0))[1]
    if smem and ".nv.shared.reserved.0" in secs:
        smem -= RESERVED_SMEM
    return {"registers": regs, "static_smem": smem, "stack_frame": frame}
