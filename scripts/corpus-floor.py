#!/usr/bin/env python3
"""Where the aligned fence's cost is, on the kernel corpus: the aligned form as the fence
prints it, and the same PTX with parts of the fence deleted, each assembled and counted as
scripts/corpus-table.py counts (static sm_90 SASS, ptxas 12.9, `nvdisasm -c`).

    corpus-floor.py PTXAS NVDISASM WORKDIR MODULE.ptx...

WORKDIR holds the `NAME.aligned.ptx` that corpus-table.py wrote for each module. The variants
are measurements only, not forms the fence's checker passes:

- `no mask`: each global access's mask (`and.b32 %__kargs_k, %__kargs_u, %__kargs_gN`) made a
  `mov`: what a proof of every global access would leave while the kernel's pointers are
  offsets into the fence (the join to the fence's base stays).
- `no mask, the join a 64-bit add`: each global access's sequence replaced by the kernel's
  address plus the fence's base (`add.s64`): the same proof with the base added, not merged
  into the low half.
- `no join`: each global access's whole sequence (the offset's low half, the mask, the join to
  the base) replaced by the kernel's own address: global accesses as unfenced.
- `no join, no budget`: that, and the budget's count at each backward branch and its load
  deleted (the budget's exit is then dead code).

Prints a Markdown table, a row per variant: entries counted, median and worst of SASS over
unfenced.
"""

import importlib.util
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("corpus_table", os.path.join(HERE, "corpus-table.py"))
table = importlib.util.module_from_spec(spec)
spec.loader.exec_module(table)

MASK = re.compile(r"^\s*and\.b32\s+(%__kargs_k),\s*(%__kargs_u),\s*%__kargs_g\d+\s*;")
JOIN = [
    re.compile(r"^\s*cvt\.u32\.u64\s+%__kargs_u,\s*(%[\w$]+)\s*;"),
    re.compile(r"^\s*and\.b32\s+%__kargs_k,\s*%__kargs_u,\s*%__kargs_g\d+\s*;"),
    re.compile(r"^\s*cvt\.u64\.u32\s+%__kargs_c,\s*%__kargs_k\s*;"),
    re.compile(r"^\s*or\.b64\s+(%__kargs_\w+),\s*%__kargs_c,\s*%__kargs_gb\s*;"),
]
BUDGET = re.compile(
    r"^\s*(ld\.param\.u32\s+%__kargs_b,|setp\.\w+(\.\w+)*\s+%__kargs_q,\s*%__kargs_b,"
    r"|@%__kargs_q\s+bra|@!?%[\w$]+\s+sub\.u32\s+%__kargs_b,)"
)


def no_mask(lines):
    return [MASK.sub(r"\tmov.b32\t\1, \2;", line) for line in lines]


def replace_joins(lines, address):
    """`lines` with each global access's sequence (the offset's low half, the mask, the join)
    replaced by the statement `address(register the access uses, the kernel's address)`."""
    out, i = [], 0
    while i < len(lines):
        matches = [p.match(line) for p, line in zip(JOIN, lines[i : i + 4])]
        if len(matches) == 4 and all(matches):
            out.append(address(matches[3].group(1), matches[0].group(1)))
            i += 4
        else:
            out.append(lines[i])
            i += 1
    return out


def no_join(lines):
    return replace_joins(lines, lambda into, address: f"\tmov.b64\t{into}, {address};")


def add_join(lines):
    return replace_joins(lines, lambda into, address: f"\tadd.s64\t{into}, {address}, %__kargs_gb;")


def no_budget(lines):
    return [line for line in lines if not BUDGET.match(line)]


VARIANTS = [
    ("as the fence prints it", lambda lines: lines),
    ("no mask", no_mask),
    ("no mask, the join a 64-bit add", add_join),
    ("no join", no_join),
    ("no join, no budget", lambda lines: no_budget(no_join(lines))),
]


def main():
    ptxas, nvdisasm, work = sys.argv[1:4]
    ratios = {name: [] for name, _ in VARIANTS}
    for ptx in sys.argv[4:]:
        name = os.path.splitext(os.path.basename(ptx))[0]
        aligned = os.path.join(work, f"{name}.aligned.ptx")
        if not os.path.exists(aligned):
            continue  # refused by the fence
        plain, _ = table.assemble(ptxas, nvdisasm, ptx, os.path.join(work, "floor.cubin"))
        lines = open(aligned, encoding="ascii").read().split("\n")
        for variant, edit in VARIANTS:
            path = os.path.join(work, f"{name}.floor.ptx")
            with open(path, "w", encoding="ascii") as out:
                out.write("\n".join(edit(lines)))
            counts, _ = table.assemble(ptxas, nvdisasm, path, os.path.join(work, "floor.cubin"))
            ratios[variant].extend(counts[e] / plain[e] for e in plain if e in counts)
    print("| the aligned form | entries | static SASS over unfenced, median | worst |")
    print("|---|---:|---:|---:|")
    for variant, values in ratios.items():
        print(f"| {variant} | {len(values)} | {statistics.median(values):.2f} | {max(values):.2f} |")


if __name__ == "__main__":
    main()
