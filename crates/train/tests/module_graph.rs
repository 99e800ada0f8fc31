//! The crate's modules form layers: read from the `use crate::…` lines of
//! each module's file (tests aside), no module reaches back to one that
//! uses it, directly or through others. A circle here is a knot to undo,
//! not a test to loosen: move the shared item down to a module both use.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `src/` with the modules its `use crate::` lines name.
fn module_uses() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "rs") || name == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Unit tests may use anything: they sit outside the layers.
        let code = text.split("#[cfg(test)]").next().unwrap();
        let uses = code
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("use crate::"))
            .chain(
                code.lines()
                    .filter_map(|line| line.trim_start().strip_prefix("pub use crate::")),
            )
            .map(|rest| {
                let module: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                module
            })
            .collect();
        graph.insert(name.to_string(), uses);
    }
    graph
}

/// A circle through `graph`, if there is one, as the modules along it.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_modules_of_the_crate_use_one_another_without_a_circle() {
    let graph = module_uses();
    for (module, uses) in &graph {
        for used in uses {
            assert!(
                graph.contains_key(used),
                "src/{module}.rs uses `crate::{used}`, which is no module: name the module \
                 that defines it"
            );
        }
    }
    assert_eq!(circle(&graph), None, "modules in a circle");
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let edge = |graph: &mut BTreeMap<String, BTreeSet<String>>, a: &str, b: &str| {
        graph.entry(a.into()).or_default().insert(b.into());
        graph.entry(b.into()).or_default();
    };
    edge(&mut graph, "config", "overrides");
    edge(&mut graph, "registries", "config");
    edge(&mut graph, "registries", "strategies");
    assert_eq!(circle(&graph), None);
    edge(&mut graph, "strategies", "registries");
    assert_eq!(
        circle(&graph),
        Some(vec![
            "registries".into(),
            "strategies".into(),
            "registries".into()
        ])
    );
}
