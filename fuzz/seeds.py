#!/usr/bin/env python3
"""Writes the hand-made seeds and the conformance vectors' inputs into the seed corpora.

    python3 fuzz/seeds.py            # from the repository root, or from fuzz/

The byte-level targets (`parse_argv`, `differential`) read an 8-byte little-endian guest
memory length, then the argv buffer (`ArgvInput` in src/lib.rs). Each seed is written under
its content's hash, so running the script again adds nothing twice. The conformance vectors
(`tests/vectors/argv.json`, schema in tests/vectors/README.md) are read when present: each
vector's `hex` and `mem_len` become one seed.

The `declaration` target reads a mode byte, then a declaration's text (an even mode) or the
bytes `arbitrary` builds a declaration, arguments and a shape from (an odd mode): its seeds are
the declarations of docs/declarations.md and the kernels of the project, some malformed ones,
and a few structured inputs.
"""
import hashlib
import json
import pathlib
import struct
import sys

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
TARGETS = ["parse_argv", "differential"]
MAX_BYTES = 4096


def rec(tag, fmt, *values):
    return bytes([tag]) + struct.pack("<" + fmt, *values)


def i32(v): return rec(0x01, "i", v)
def i64(v): return rec(0x02, "q", v)
def f32(bits): return rec(0x03, "I", bits)
def f64(bits): return rec(0x04, "Q", bits)
def u32(v): return rec(0x05, "I", v)
def u64(v): return rec(0x06, "Q", v)
def ptr(off, ln): return rec(0x07, "II", off, ln)


def hand_seeds():
    every = i32(-7) + i64(-(2**63)) + f32(0x3FC00000) + f64(0x7FF8000000000001) + u32(2**32 - 1) \
        + u64(42) + ptr(64, 128)
    seeds = [
        (0, b""),
        (192, every),
        (191, every),  # the window ends one byte past memory
        (0, u32(1) + bytes([0x00])),
        (0, u32(1) + bytes([0x08, 1, 2, 3, 4])),
        (0, bytes([0xFF])),
        (100, ptr(100, 0)),
        (100, ptr(60, 41)),
        (2**32, ptr(2**32 - 1, 1)),
        (2**32, ptr(2**32 - 1, 2**32 - 1)),
        (4096, ptr(0, 4096) + ptr(4096, 0) + f32(0x7FC00001)),
        (0, u32(7) * 128),
        (0, u32(7) * 128 + bytes([0xFF])),
        (0, u32(7) * 2 + bytes([0xEE])),
        (0, u64(1) * 128),  # 1152 bytes: the most 128 records can take
        (0, bytes([0xFF]) * (MAX_BYTES + 1)),  # over the byte cap: nothing is read
    ]
    for tag in range(1, 8):
        size = 4 if tag in (1, 3, 5) else 8
        for present in (0, size - 1):
            seeds.append((64, u32(5) + bytes([tag]) + bytes(present)))
    return seeds


def vector_seeds():
    path = ROOT / "tests" / "vectors" / "argv.json"
    if not path.exists():
        print(f"{path} not found: hand seeds only", file=sys.stderr)
        return []
    doc = json.loads(path.read_text())
    if doc.get("version") != 1:
        sys.exit(f"{path}: vector schema version {doc.get('version')!r}, this script reads 1")
    seeds = []
    for v in doc["vectors"]:
        argv = bytes.fromhex("".join(v["hex"].split()))
        seeds.append((v["mem_len"], argv))
    print(f"{len(seeds)} seeds from {path.relative_to(ROOT)}", file=sys.stderr)
    return seeds


DECLARATIONS = [
    "vector_add(a: &[f32; n], b: &[f32; n], out: &mut [f32; n], n: u32)",
    "every_scalar(a: i32, b: i64, c: f32, d: f64, e: u32, f: u64, out: &mut [u8; 48])",
    "k(a: &[i8; 3], b: &out [u16; (rows + 1) * cols / 2], c: &mut [f64; grid.x * block.y - 0x10], "
    "rows: i32, cols: u64, s: f32, t: f64, u: i64)",
    "k(a: &[f64; rows * cols], b: &[u8; grid.x * block.x * 4 + grid.y], rows: i32, cols: u64)",
    "k(a: &[u8; n - 2], n: u32)",
    "k(a: &[u8; 64 / n], n: u32)",
    "empty()",
    "k(a: &[f32; n], p: ptr, n: u32)",
    "k(a: &[f32; m], n: u32)",
    "k(a: &[u8; x], x: f32)",
    "k(a: u32, a: u32)",
    "k(a: &[u8; ((((((((((1))))))))))])",
    "k(a: &[u8; 4294967296])",
    "k(grid: u32)",
    "k(a: &[u8; n] n: u32)",
    "k(",
    "",
]


def declaration_seeds():
    seeds = [b"\x00" + d.encode() for d in DECLARATIONS]
    seeds += [bytes([1]) + bytes(range(i, i + 64)) for i in (0, 7, 100, 191)]
    return seeds


def main():
    out = FUZZ / "corpus" / "declaration"
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for data in declaration_seeds():
        name = out / ("seed-" + hashlib.sha1(data).hexdigest()[:16])
        if not name.exists():
            name.write_bytes(data)
            written += 1
    print(f"declaration: {written} new seeds", file=sys.stderr)
    seeds = hand_seeds() + vector_seeds()
    for target in TARGETS:
        out = FUZZ / "corpus" / target
        out.mkdir(parents=True, exist_ok=True)
        written = 0
        for memory_len, argv in seeds:
            data = struct.pack("<Q", memory_len) + argv
            name = out / ("seed-" + hashlib.sha1(data).hexdigest()[:16])
            if not name.exists():
                name.write_bytes(data)
                written += 1
        print(f"{target}: {written} new seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
