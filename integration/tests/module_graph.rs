//! The modules of the crates whose layering a reader relies on import in one direction: no
//! cycle among the modules of cuda-backend (front end, signature and fence, registry, driver,
//! module cache, device, launcher), of the emulator and its instruction decoder, or of the CLI's
//! guest runner.
//!
//! A module is a file of the directory (a subdirectory counts as one module); it depends on a
//! sibling when its code (not its comments, not its `#[cfg(test)] mod tests`) names the sibling
//! through `crate::` (for a crate's `src/`) or `super::` (for a module's directory).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The code of a Rust file: comment lines dropped, and everything from its test module on.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The names that follow `prefix` in `code` (`crate::driver::Kernel` gives `driver`).
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue; // `super::super::x`, `my_crate::x`: not this directory's sibling
        }
        let rest = &code[at + prefix.len()..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() && !matches!(name.as_str(), "super" | "self" | "crate") {
            names.insert(name);
        }
    }
    // `use crate::{a, b::C}` lists several.
    for (at, _) in code.match_indices(&format!("{prefix}{{")) {
        let rest = &code[at + prefix.len() + 1..];
        let list = &rest[..rest.find('}').unwrap_or(rest.len())];
        for item in list.split(',') {
            let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The dependency graph among the modules of `dir`, by `prefix`.
fn graph(dir: &Path, prefix: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let files = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs"))
                .collect();
            modules.insert(name, files);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !matches!(name.as_str(), "lib" | "main" | "mod")
        {
            modules.entry(name).or_default().push(path);
        }
    }
    modules
        .iter()
        .map(|(name, files)| {
            let uses = files
                .iter()
                .flat_map(|f| named_after(&code(f), prefix))
                .filter(|n| n != name && modules.contains_key(n))
                .collect();
            (name.clone(), uses)
        })
        .collect()
}

/// A cycle of `graph`, as the modules along it, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_layered_crates_have_no_module_cycle() {
    let root = root();
    let dirs = [
        ("cuda-backend/src", "crate::"),
        ("cuda-backend/src/driver", "super::"),
        ("cuda-emulator/src", "crate::"),
        ("cuda-emulator/src/exec", "super::"),
        ("demo/src/guest", "super::"),
    ];
    let mut cycles = Vec::new();
    for (dir, prefix) in dirs {
        let graph = graph(&root.join(dir), prefix);
        assert!(graph.len() >= 3, "{dir}: read too few modules: {graph:?}");
        if let Some(cycle) = cycle(&graph) {
            cycles.push(format!("{dir}: {}", cycle.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn a_cycle_is_found() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            graph.entry((*a).to_owned()).or_default().insert((*b).to_owned());
            graph.entry((*b).to_owned()).or_default();
        }
        graph
    };
    assert_eq!(cycle(&edges(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap(), ["a", "b", "c", "a"]);
    let code = "use crate::{driver::Kernel, modules};\nuse crate::fence::X;\nlet y = super::super::z;";
    assert_eq!(named_after(code, "crate::"), ["driver", "fence", "modules"].map(String::from).into());
    assert!(named_after(code, "super::").is_empty());
}
