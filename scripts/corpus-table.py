#!/usr/bin/env python3
"""The fence on the kernel corpus (cuda-backend/kernels/corpus/): one Markdown table row per
entry, what the fence did with its module and what it costs in sm_90 SASS.

    corpus-table.py PTXAS NVDISASM FENCE WORKDIR MODULE.ptx...

FENCE is the built `fence` example of kernel-args-cuda (prints a module fenced and checked, or
why not, exit 1). For each module, ptxas 12.9 (`-v -arch=sm_90`) assembles the PTX as nvcc
wrote it and, where the fence accepts it, as the fence printed it in each of its two forms (the
clamped one, and the aligned one of `fence --aligned`); NVIDIA's disassembler lists
each cubin (`nvdisasm -c`) and every non-`NOP` instruction of an entry's section is counted,
with the registers `ptxas -v` reports. Prints the table on stdout, then one summary line per
measure (accepted entries, median and worst SASS ratio, median register growth, entries pushed
across an occupancy step) that docs/performance.md quotes.
"""

import os
import re
import statistics
import subprocess
import sys

STEPS = (32, 64, 128)


def sass_counts(listing):
    """Per function: static SASS instructions other than NOP."""
    counts, function = {}, None
    for line in listing.splitlines():
        m = re.match(r"^\.text\.([\w$]+):", line)
        if m:
            function = m.group(1)
            counts[function] = 0
            continue
        m = re.match(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_]*)", line)
        if m and function is not None and m.group(1) != "NOP":
            counts[function] += 1
    return counts


def registers(log):
    """Per function: the registers ptxas -v reports."""
    out, function = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([\w$]+)'", line)
        if m:
            function = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and function is not None:
            out[function] = int(m.group(1))
    return out


def assemble(ptxas, nvdisasm, ptx, cubin):
    log = subprocess.run([ptxas, "-v", "-arch=sm_90", ptx, "-o", cubin], capture_output=True, text=True, check=True)
    listing = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout
    return sass_counts(listing), registers(log.stderr)


def entries(ptx):
    names = []
    for line in open(ptx, encoding="ascii"):
        m = re.match(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)\s*\(", line)
        if m:
            names.append(m.group(1))
    return names


def step_crossed(before, after):
    return any(before <= s < after for s in STEPS)


def main():
    ptxas, nvdisasm, fence, work = sys.argv[1:5]
    modules = sys.argv[5:]
    os.makedirs(work, exist_ok=True)
    print(
        "| module | entry | fence | static SASS unfenced | fenced | fenced / unfenced | aligned | aligned / unfenced "
        "| registers unfenced → fenced → aligned |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    total, refused = 0, {}
    forms = {"fenced": ([], [], []), "aligned": ([], [], [])}  # ratios, register growth, crossed
    for ptx in modules:
        name = os.path.splitext(os.path.basename(ptx))[0]
        plain_sass, plain_regs = assemble(ptxas, nvdisasm, ptx, os.path.join(work, name + ".cubin"))
        fenced_ptx = os.path.join(work, name + ".fenced.ptx")
        run = subprocess.run([fence, ptx], capture_output=True, text=True)
        if run.returncode == 0:
            with open(fenced_ptx, "w", encoding="ascii") as f:
                f.write(run.stdout)
            fenced_sass, fenced_regs = assemble(ptxas, nvdisasm, fenced_ptx, os.path.join(work, name + ".fenced.cubin"))
            aligned_ptx = os.path.join(work, name + ".aligned.ptx")
            aligned = subprocess.run([fence, "--aligned", ptx], capture_output=True, text=True, check=True)
            with open(aligned_ptx, "w", encoding="ascii") as f:
                f.write(aligned.stdout)
            aligned_sass, aligned_regs = assemble(
                ptxas, nvdisasm, aligned_ptx, os.path.join(work, name + ".aligned.cubin")
            )
            verdict = "fenced"
        elif run.returncode == 1:
            fenced_sass, fenced_regs, aligned_sass, aligned_regs = {}, {}, {}, {}
            # "PATH: PTX line N: `statement`: reason": the reason, after the last "`: ".
            message = run.stderr.strip().splitlines()[-1]
            reason = message.rsplit("`: ", 1)[-1] if "`: " in message else message.split(": ", 1)[-1]
            verdict = "refused: " + reason
            refused[name] = reason
        else:
            sys.exit(f"corpus-table: {fence} {ptx}: {run.stderr.strip()}")
        for entry in entries(ptx):
            total += 1
            before, before_regs = plain_sass.get(entry), plain_regs.get(entry, 0)
            if before is None:
                sys.exit(f"corpus-table: {ptx}: {entry} is not in the SASS listing")
            if entry in fenced_sass:
                cells, regs = [], [str(before_regs)]
                for form, sass, form_regs in (("fenced", fenced_sass, fenced_regs), ("aligned", aligned_sass, aligned_regs)):
                    after, after_regs = sass[entry], form_regs.get(entry, 0)
                    ratio = after / before
                    ratios, growth, crossed = forms[form]
                    ratios.append(ratio)
                    growth.append(after_regs - before_regs)
                    if step_crossed(before_regs, after_regs):
                        crossed.append(entry)
                    cells.append(f"{after} | {ratio:.2f}")
                    regs.append(str(after_regs))
                print(f"| `{name}` | `{entry}` | {verdict} | {before} | {' | '.join(cells)} | {' → '.join(regs)} |")
            else:
                print(f"| `{name}` | `{entry}` | {verdict} | {before} | | | | | {before_regs} |")
    print()
    print(f"Fenced: {len(forms['fenced'][0])} of {total} entries, {len(modules) - len(refused)} of {len(modules)} modules.")
    for form, (ratios, growth, crossed) in forms.items():
        if ratios:
            print(
                f"Static SASS {form} / unfenced: median {statistics.median(ratios):.2f}, "
                f"worst {max(ratios):.2f}; registers: median growth {statistics.median(growth):g}, "
                f"entries pushed across an occupancy step (32, 64, 128 registers): {len(crossed)}"
                + (f" ({', '.join(crossed)})" if crossed else "")
                + "."
            )


if __name__ == "__main__":
    main()
