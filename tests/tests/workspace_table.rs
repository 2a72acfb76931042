//! The README's workspace table stays honest: every crate of the workspace under `crates/`
//! has its row, and every row names a crate that exists.

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
    let crates: Vec<String> = members(&root)
        .into_iter()
        .filter(|m| m.starts_with("crates/"))
        .collect();
    assert!(crates.len() >= 10, "{crates:?}");
    for member in &crates {
        assert!(
            rows.contains(member),
            "README.md's workspace table has no row for `{member}` (rows: {rows:?})"
        );
    }
    for row in rows.iter().filter(|r| r.starts_with("crates/")) {
        assert!(
            crates.contains(row),
            "README.md's workspace table lists `{row}`, which is not a workspace member"
        );
    }
    for folder in ["tests/", "plugins/"] {
        assert!(rows.iter().any(|r| r == folder), "no row for `{folder}`");
    }
}
