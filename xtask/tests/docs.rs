//! Documentation that states facts the tree can check: `docs/ARCHITECTURE.md`'s crate table
//! against each crate's `Cargo.toml` and the `cargo xtask` commands the docs use, and comments
//! that say what they mean instead of pointing at an issue number.
#![allow(clippy::unwrap_used)] // Test code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value of `key = "..."` on a line of a manifest.
fn string_value(line: &str, key: &str) -> Option<String> {
    let rest = line
        .trim()
        .strip_prefix(key)?
        .trim_start()
        .strip_prefix('=')?;
    let rest = rest.trim().strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// Workspace crates: package name to directory.
fn crates() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let dirs = std::fs::read_dir(root().join("crates")).unwrap();
    for dir in dirs
        .map(|e| e.unwrap().path())
        .chain([root().join("benches"), root().join("xtask")])
    {
        let manifest = dir.join("Cargo.toml");
        if !manifest.exists() {
            continue;
        }
        let text = read(&manifest);
        let name = text.lines().find_map(|l| string_value(l, "name")).unwrap();
        out.insert(name, dir);
    }
    out
}

/// `[workspace.dependencies]` keys that name a workspace crate, to its package name.
fn workspace_keys(crates: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let text = read(&root().join("Cargo.toml"));
    for line in text.lines() {
        let Some((key, rest)) = line.split_once('=') else {
            continue;
        };
        let Some(at) = rest.find("path = \"") else {
            continue;
        };
        let path = &rest[at + 8..];
        let path = &path[..path.find('"').unwrap()];
        let package = crates
            .iter()
            .find(|(_, dir)| dir.ends_with(path))
            .map(|(name, _)| name.clone());
        if let Some(package) = package {
            out.insert(key.trim().to_owned(), package);
        }
    }
    out
}

/// The workspace crates `dir`'s package depends on (normal dependencies, any target).
fn workspace_deps(dir: &Path, keys: &BTreeMap<String, String>) -> BTreeSet<String> {
    let text = read(&dir.join("Cargo.toml"));
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if !in_deps || line.starts_with('#') || line.is_empty() {
            continue;
        }
        let key = line.split(['=', '.']).next().unwrap().trim();
        if let Some(package) = keys.get(key) {
            out.insert(package.clone());
        }
    }
    out
}

/// The crate table's rows: first column's first backticked name, and the third column.
fn table_rows(doc: &str) -> Vec<(String, String, String)> {
    doc.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            let first = cells[0];
            // `benches` (`dsrt-atlas-benches`): the package is the parenthesised name.
            let names: Vec<&str> = first.split('`').skip(1).step_by(2).collect();
            let name = names.last().unwrap().to_string();
            (name, cells[1].to_owned(), cells[2].to_owned())
        })
        .collect()
}

#[test]
fn the_crate_tables_dependencies_are_the_manifests() {
    let crates = crates();
    let keys = workspace_keys(&crates);
    let doc = read(&root().join("docs/ARCHITECTURE.md"));
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, _, deps) in table_rows(&doc) {
        let Some(dir) = crates.get(&name) else {
            continue;
        };
        let actual = workspace_deps(dir, &keys);
        // A plain list of crate names (or "-") is a claim to check; prose ("the file crates",
        // "facades") is a summary.
        let listed: Option<BTreeSet<String>> = if deps == "-" {
            Some(BTreeSet::new())
        } else {
            deps.split(',')
                .map(|d| d.trim().trim_matches('`').to_owned())
                .map(|d| crates.contains_key(&d).then_some(d))
                .collect()
        };
        if let Some(listed) = listed {
            checked += 1;
            if listed != actual {
                wrong.push(format!(
                    "{name}: table says {listed:?}, Cargo.toml has {actual:?}"
                ));
            }
        }
    }
    assert!(checked >= 10, "only {checked} rows checked");
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md crate table:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_xtask_row_names_every_cargo_xtask_command_the_docs_use() {
    let mut docs = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    let mut used = BTreeSet::new();
    for doc in &docs {
        let text = read(doc);
        for (at, _) in text.match_indices("cargo xtask ") {
            let word: String = text[at + 12..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !word.is_empty() && !word.starts_with('-') {
                used.insert(word);
            }
        }
    }
    let doc = read(&root().join("docs/ARCHITECTURE.md"));
    let (_, job, _) = table_rows(&doc)
        .into_iter()
        .find(|(name, _, _)| name == "xtask")
        .unwrap();
    let missing: Vec<&String> = used
        .iter()
        .filter(|word| {
            ![
                format!("`{word}`"),
                format!("`{word} "),
                format!(" {word}`"),
            ]
            .iter()
            .any(|form| job.contains(form.as_str()))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the xtask row of docs/ARCHITECTURE.md does not name {missing:?}"
    );
}

/// Text files under `dir`, skipping build output.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                text_files(&path, out);
            }
        } else if [".rs", ".md", ".toml", ".py", ".sh"]
            .iter()
            .any(|ext| name.ends_with(ext))
        {
            out.push(path);
        }
    }
}

#[test]
fn comments_say_what_they_mean_not_which_issue() {
    let mut files = Vec::new();
    for dir in ["crates", "docs", "xtask", "benches"] {
        text_files(&root().join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = read(&file).to_lowercase();
        for (number, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("issue") {
                let rest = line[at + 5..].trim_start_matches('s');
                let rest = rest
                    .strip_prefix(' ')
                    .unwrap_or(rest)
                    .trim_start_matches('#');
                if rest.starts_with(|c: char| c.is_ascii_digit()) {
                    found.push(format!("{}:{}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "say what is meant instead of an issue number:\n{}",
        found.join("\n")
    );
}
