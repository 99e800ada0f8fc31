//! Finds the presets: every `presets/*.toml` becomes an entry of
//! `PRESETS` (src/presets.rs), by file name, so adding a preset is adding
//! its file.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir =
        Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("presets");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .map(|path| {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            assert!(
                valid,
                "preset file {}: a preset's name is lowercase letters, digits and dashes",
                path.display()
            );
            name.to_string()
        })
        .collect();
    names.sort();
    let mut table = String::from("&[\n");
    for name in &names {
        let file = dir.join(format!("{name}.toml"));
        writeln!(
            table,
            "    Preset {{ name: {name:?}, toml: include_str!({:?}) }},",
            file.display().to_string()
        )
        .expect("writing to a string");
    }
    table.push(']');
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("presets.rs");
    std::fs::write(&out, table).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
