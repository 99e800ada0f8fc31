//! Every relative link of the pages a user reads resolves: the README,
//! docs/ and docs/algorithms/, and each crate's README (crates/*/README.md,
//! which crates.io shows too). A link's `#anchor` is not checked, only the
//! file or directory before it. The experiment reports under
//! docs/experiments are records of their commit and are not checked.

use std::path::{Path, PathBuf};

/// The pages whose links are checked.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for dir in ["docs", "docs/algorithms"] {
        pages.extend(markdown_in(&root.join(dir)));
    }
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let readme = krate.unwrap().path().join("README.md");
        if readme.is_file() {
            pages.push(readme);
        }
    }
    pages.sort();
    pages
}

fn markdown_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect()
}

/// The targets of `text`'s Markdown links `[label](target)`, outside code
/// blocks, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_code = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let tail = &rest[at + 2..];
            let Some(end) = tail.find(')') else { break };
            found.push((number + 1, tail[..end].to_string()));
            rest = &tail[end..];
        }
    }
    found
}

/// The relative links of `page` (text `text`) whose file is missing.
fn broken(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().unwrap();
    links(text)
        .into_iter()
        .filter(|(_, target)| !target.contains("://") && !target.starts_with("mailto:"))
        .filter_map(|(line, target)| {
            let path = target.split('#').next().unwrap();
            let path = path.split_whitespace().next().unwrap_or("");
            (!path.is_empty() && !dir.join(path).exists())
                .then(|| format!("{}:{line}: {target}", page.display()))
        })
        .collect()
}

#[test]
fn every_relative_link_resolves() {
    let pages = pages();
    assert!(pages.len() > 20, "{} pages", pages.len());
    let found: Vec<String> = pages
        .iter()
        .flat_map(|page| broken(page, &std::fs::read_to_string(page).unwrap()))
        .collect();
    assert!(found.is_empty(), "broken links: {found:#?}");
}

#[test]
fn a_broken_link_is_caught() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/run/README.md");
    let text = "[shoal](../../README.md), [the guide](../../docs/getting-started.md#the-run-directory)\n\
                [gone](../../examples/custom_env.rs), [web](https://docs.rs)\n\
                ```\n[code](not/checked.md)\n```\n";
    let found = broken(&page, text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with(":2: ../../examples/custom_env.rs"),
        "{found:?}"
    );
}
