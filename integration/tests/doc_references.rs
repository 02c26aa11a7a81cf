//! What the docs name exists: the repository's files, and the Rust items.
//!
//! Links between docs and to headings are checked by lychee, offline (`scripts/doc-links.sh`,
//! CI's `12-doc-links.sh`); intra-doc links in the crates by rustdoc with warnings denied
//! (`25-package.sh`). These tests cover what neither reads: names written as inline code.
//!
//! - **Files**: an inline-code span in a Markdown file, or in a comment of a Rust, shell or
//!   TOML file, that is a path (letters, digits, `_ . - /`, with a `/`) whose first part is a
//!   directory or file of the repository's root, or of the naming file's directory or crate,
//!   must exist there. Paths under `target/` are build outputs and not checked.
//! - **Items**: an inline-code span in a Markdown file that is a Rust path (`a::b::c`, with an
//!   optional call `(...)` or generics `<...>`), starting with one of the project's crates or
//!   one of its type names, must name items that exist: every segment after the first is the
//!   name of an item the workspace's sources define or re-export (a module, type, trait,
//!   function, method, constant, static, enum variant, field or macro), read with `syn`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// Every file under `dir` whose name ends with one of `extensions`, skipping build outputs,
/// git's directory, fuzz corpora and artifacts.
fn files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let skip = matches!(name.as_str(), "target" | ".git" | "corpus" | "artifacts" | "coverage")
                || name.starts_with('.') && name != ".ci";
            if !skip {
                files(&path, extensions, out);
            }
        } else if extensions.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// Markdown without its fenced code blocks (their text is code, not prose).
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The inline-code spans of `text` (between single backticks on one line), with their line.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push((number + 1, span.to_owned()));
        }
    }
    spans
}

/// The comment lines of a source file: `//` in Rust, `#` in shell and TOML.
fn comments(path: &Path, text: &str) -> String {
    let rust = path.extension().is_some_and(|e| e == "rs");
    text.lines()
        .map(|line| {
            let marker = if rust { line.find("//") } else { line.find('#') };
            marker.map_or("", |at| &line[at..])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The directory of the crate `path` is in: the nearest one up with a Cargo.toml.
fn crate_dir(path: &Path) -> Option<PathBuf> {
    path.ancestors().skip(1).find(|dir| dir.join("Cargo.toml").is_file()).map(Path::to_path_buf)
}

/// Whether `span` looks like a path of the repository, seen from `bases`. Build outputs
/// (any `target` directory) are generated, so a clean clone has none to check.
fn names_a_repository_path(span: &str, bases: &[PathBuf]) -> bool {
    let pathlike = span.contains('/')
        && !span.starts_with('/')
        && !span.split('/').any(|part| part == "target")
        && span.chars().all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c));
    let first = span.split('/').next().unwrap_or_default();
    pathlike && !first.is_empty() && bases.iter().any(|base| base.join(first).exists())
}

#[test]
fn every_file_the_docs_name_exists() {
    let root = root();
    let mut sources = Vec::new();
    files(&root, &[".md", ".rs", ".sh", ".toml"], &mut sources);
    let (mut checked, mut missing) = (0, Vec::new());
    for path in &sources {
        let text = std::fs::read_to_string(path).unwrap();
        let text =
            if path.extension().is_some_and(|e| e == "md") { prose(&text) } else { comments(path, &text) };
        let mut bases = vec![root.clone(), path.parent().unwrap().to_path_buf()];
        bases.extend(crate_dir(path));
        for (line, span) in code_spans(&text) {
            let span = span.trim_end_matches('/');
            if !names_a_repository_path(span, &bases) {
                continue;
            }
            checked += 1;
            if !bases.iter().any(|base| base.join(span).exists()) {
                missing.push(format!("{}:{line}: `{span}`", path.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(checked >= 400, "only {checked} paths found: is the scan broken?");
    assert!(missing.is_empty(), "the docs name files that do not exist:\n{}", missing.join("\n"));
}

/// The names of the items a Rust file defines or re-exports.
fn item_names(items: &[syn::Item], names: &mut BTreeSet<String>) {
    fn fields(fields: &syn::Fields, names: &mut BTreeSet<String>) {
        names.extend(fields.iter().filter_map(|f| f.ident.as_ref().map(ToString::to_string)));
    }
    fn uses(tree: &syn::UseTree, names: &mut BTreeSet<String>) {
        match tree {
            syn::UseTree::Path(p) => uses(&p.tree, names),
            syn::UseTree::Name(n) => {
                names.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) => {
                names.insert(r.rename.to_string());
            }
            syn::UseTree::Glob(_) => {}
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| uses(t, names)),
        }
    }
    for item in items {
        match item {
            syn::Item::Struct(s) => {
                names.insert(s.ident.to_string());
                fields(&s.fields, names);
            }
            syn::Item::Enum(e) => {
                names.insert(e.ident.to_string());
                for variant in &e.variants {
                    names.insert(variant.ident.to_string());
                    fields(&variant.fields, names);
                }
            }
            syn::Item::Union(u) => {
                names.insert(u.ident.to_string());
            }
            syn::Item::Fn(f) => {
                names.insert(f.sig.ident.to_string());
            }
            syn::Item::Const(c) => {
                names.insert(c.ident.to_string());
            }
            syn::Item::Static(s) => {
                names.insert(s.ident.to_string());
            }
            syn::Item::Type(t) => {
                names.insert(t.ident.to_string());
            }
            syn::Item::Trait(t) => {
                names.insert(t.ident.to_string());
                for item in &t.items {
                    match item {
                        syn::TraitItem::Fn(f) => names.insert(f.sig.ident.to_string()),
                        syn::TraitItem::Const(c) => names.insert(c.ident.to_string()),
                        syn::TraitItem::Type(t) => names.insert(t.ident.to_string()),
                        _ => false,
                    };
                }
            }
            syn::Item::Impl(i) => {
                for item in &i.items {
                    match item {
                        syn::ImplItem::Fn(f) => names.insert(f.sig.ident.to_string()),
                        syn::ImplItem::Const(c) => names.insert(c.ident.to_string()),
                        syn::ImplItem::Type(t) => names.insert(t.ident.to_string()),
                        _ => false,
                    };
                }
            }
            syn::Item::Mod(m) => {
                names.insert(m.ident.to_string());
                if let Some((_, items)) = &m.content {
                    item_names(items, names);
                }
            }
            syn::Item::Use(u) => uses(&u.tree, names),
            syn::Item::Macro(m) => {
                if let Some(ident) = &m.ident {
                    names.insert(ident.to_string());
                }
            }
            _ => {}
        }
    }
}

/// `span` as the segments of a Rust path (`a::b::c`, a call or generics after it dropped), or
/// `None` when it is not one.
fn rust_path(span: &str) -> Option<Vec<&str>> {
    let span = span.split(['(', '<']).next().unwrap_or_default();
    let segments: Vec<&str> = span.split("::").collect();
    let ident = |s: &&str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    (segments.len() >= 2 && segments.iter().all(ident)).then_some(segments)
}

#[test]
fn every_item_the_docs_name_exists() {
    let root = root();
    let mut rust = Vec::new();
    files(&root, &[".rs"], &mut rust);
    let (mut names, mut types) = (BTreeSet::new(), BTreeSet::new());
    for path in &rust {
        let text = std::fs::read_to_string(path).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut defined = BTreeSet::new();
        item_names(&file.items, &mut defined);
        types.extend(defined.iter().filter(|n| n.starts_with(|c: char| c.is_ascii_uppercase())).cloned());
        names.extend(defined);
    }
    let mut crates = BTreeSet::new();
    let mut manifests = Vec::new();
    files(&root, &["Cargo.toml"], &mut manifests);
    for manifest in manifests {
        let text = std::fs::read_to_string(manifest).unwrap();
        if let Some(name) = text.lines().find_map(|l| l.strip_prefix("name = \"")) {
            crates.insert(name.trim_end_matches('"').replace('-', "_"));
        }
    }
    // The C API's library is `kargs` (capi/Cargo.toml's [lib]).
    crates.insert("kargs".to_owned());

    let mut markdown = Vec::new();
    files(&root, &[".md"], &mut markdown);
    let (mut checked, mut missing) = (0, Vec::new());
    for path in &markdown {
        let text = prose(&std::fs::read_to_string(path).unwrap());
        for (line, span) in code_spans(&text) {
            let Some(segments) = rust_path(&span) else { continue };
            if !crates.contains(segments[0]) && !types.contains(segments[0]) {
                continue;
            }
            let rest = &segments[1..];
            checked += 1;
            if let Some(unknown) = rest.iter().find(|s| !names.contains(**s)) {
                missing.push(format!(
                    "{}:{line}: `{span}`: no item `{unknown}`",
                    path.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(checked >= 60, "only {checked} item paths found: is the scan broken?");
    assert!(missing.is_empty(), "the docs name items that do not exist:\n{}", missing.join("\n"));
}
