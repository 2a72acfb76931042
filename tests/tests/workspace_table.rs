//! The README's workspace table stays honest: every crate of the workspace under `crates/`
//! has its row, and every row names a crate that exists: a workspace member, or a crate of
//! its own workspace (`crates/python`, whose manifest has a `[workspace]` table of its own),
//! and every such crate under `crates/` has its row too.

use std::path::Path;

/// The workspace members listed in the root `Cargo.toml`.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let start = manifest.find("members = [").expect("a members list");
    let list = &manifest[start..];
    let list = &list[..list.find(']').unwrap()];
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The folders under `crates/` whose manifest declares a workspace of its own (kept out of
/// the root workspace, like the Python extension module).
fn own_workspaces(root: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let manifest =
                std::fs::read_to_string(root.join("crates").join(&name).join("Cargo.toml"));
            manifest
                .ok()?
                .lines()
                .any(|l| l.trim() == "[workspace]")
                .then(|| format!("crates/{name}"))
        })
        .collect();
    found.sort();
    found
}

/// The paths in the first column of the README's workspace table.
fn table_paths(readme: &str) -> Vec<String> {
    let section = &readme[readme.find("## The workspace").expect("the section")..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_crate_has_a_row_in_the_readme_workspace_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let rows = table_paths(&readme);
    let mut crates: Vec<String> = members(&root)
        .into_iter()
        .filter(|m| m.starts_with("crates/"))
        .collect();
    assert!(crates.len() >= 10, "{crates:?}");
    crates.extend(own_workspaces(&root));
    for member in &crates {
        assert!(
            rows.contains(member),
            "README.md's workspace table has no row for `{member}` (rows: {rows:?})"
        );
    }
    for row in rows.iter().filter(|r| r.starts_with("crates/")) {
        assert!(
            crates.contains(row),
            "README.md's workspace table lists `{row}`, which is not a crate of the workspace or of its own"
        );
    }
    for folder in ["tests/", "plugins/"] {
        assert!(rows.iter().any(|r| r == folder), "no row for `{folder}`");
    }
}
