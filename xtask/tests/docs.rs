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

/// What a manifest's table header opens: `Some(None)` for a table of dependencies
/// (`[dependencies]`, `[target.'cfg(unix)'.dependencies]`), `Some(Some(key))` for one dependency
/// written as a table of its own (`[dependencies.atlas-collections]`), `None` for anything
/// else (dev- and build-dependencies included).
fn dependency_table(header: &str) -> Option<Option<&str>> {
    let header = header
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim();
    let rest = if header.starts_with("target.") {
        &header[header.rfind(".dependencies")? + ".dependencies".len()..]
    } else {
        header.strip_prefix("dependencies")?
    };
    if rest.is_empty() {
        return Some(None);
    }
    Some(Some(rest.strip_prefix('.')?.trim().trim_matches('"')))
}

/// The workspace crates `dir`'s package depends on (normal dependencies, any target).
fn workspace_deps(dir: &Path, keys: &BTreeMap<String, String>) -> BTreeSet<String> {
    let text = read(&dir.join("Cargo.toml"));
    let mut out = BTreeSet::new();
    let mut in_deps = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = false;
            match dependency_table(line) {
                Some(None) => in_deps = true,
                Some(Some(key)) => out.extend(keys.get(key).cloned()),
                None => {}
            }
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

/// The crate table's rows: the first column's last backticked name (the package), and the
/// third column.
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

/// The crates a dependency cell lists: `-` for none, else backticked workspace crate names
/// separated by commas (`` `dsrt-index`, `dsrt-schema` ``). Anything else (prose such as "the
/// file crates" or "facades", a note in parentheses, a crate from outside the workspace) is an
/// error saying what is wrong.
fn listed_deps(cell: &str, crates: &BTreeMap<String, PathBuf>) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    if cell == "-" {
        return Ok(out);
    }
    for item in cell.split(',').map(str::trim) {
        let name = item
            .strip_prefix('`')
            .and_then(|rest| rest.strip_suffix('`'))
            .filter(|name| !name.is_empty() && !name.contains(['`', ' ']));
        let Some(name) = name else {
            return Err(format!(
                "{item:?} is not a backticked crate name (write the list of crates, or `-`)"
            ));
        };
        if !crates.contains_key(name) {
            return Err(format!("`{name}` is not a crate of the workspace"));
        }
        if !out.insert(name.to_owned()) {
            return Err(format!("`{name}` is listed twice"));
        }
    }
    Ok(out)
}

#[test]
fn the_crate_tables_dependencies_are_the_manifests() {
    let crates = crates();
    let keys = workspace_keys(&crates);
    let doc = read(&root().join("docs/ARCHITECTURE.md"));
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, _, deps) in table_rows(&doc) {
        // A row for a crate the tree does not hold (yet) has nothing to be checked against.
        let Some(dir) = crates.get(&name) else {
            continue;
        };
        checked += 1;
        let actual = workspace_deps(dir, &keys);
        match listed_deps(&deps, &crates) {
            Err(why) => wrong.push(format!(
                "{name}: the dependency cell {deps:?} is not a plain list: {why}; \
                 Cargo.toml has {actual:?}"
            )),
            Ok(listed) if listed != actual => wrong.push(format!(
                "{name}: table says {listed:?}, Cargo.toml has {actual:?}"
            )),
            Ok(_) => {}
        }
    }
    assert!(checked >= 10, "only {checked} rows checked");
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md crate table (each row's dependency cell lists the workspace \
         crates of its [dependencies], backticked and comma-separated, or `-`):\n{}",
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
