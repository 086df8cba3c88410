//! Imports that name no supplied file. Confluent (with its default
//! `validate.fields=false`) resolves a schema's types from every reference
//! it was given, whatever path the schema imports them by; protox needs the
//! import to name the file. So an import of the main schema that names
//! neither a reference, a well-known `google/protobuf/*.proto` file nor a
//! bundled one is replaced, on the same line, by imports of every reference
//! the schema does not import already. A type no reference defines is still
//! an error, reported where it is used.

use std::sync::LazyLock;

use regex::Regex;

use super::bundled;

/// An import statement, its path captured (comments are not stripped first;
/// a line comment before `import` keeps it from matching).
static IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)^[ \t]*import[ \t]+(?:public[ \t]+|weak[ \t]+)?"([^"\n]*)"[ \t]*;"#).expect("a valid pattern")
});

/// Whether `path` is a file the compiler finds without a reference.
fn is_built_in(path: &str) -> bool {
    path.starts_with("google/protobuf/") || bundled::FILES.iter().any(|(known, _)| *known == path)
}

/// `text` with its unresolvable imports redirected to the references named
/// `reference_names`; `None` when every import resolves (or there are no
/// references to redirect to).
pub fn redirect_unknown_imports(text: &str, reference_names: &[&str]) -> Option<String> {
    let imported: Vec<&str> = IMPORT
        .captures_iter(text)
        .filter_map(|found| found.get(1).map(|path| path.as_str()))
        .collect();
    let unknown = |path: &str| !is_built_in(path) && !reference_names.contains(&path);
    if reference_names.is_empty() || !imported.iter().any(|path| unknown(path)) {
        return None;
    }
    let missing: Vec<&str> = reference_names
        .iter()
        .copied()
        .filter(|name| !imported.contains(name))
        .collect();
    let mut first = true;
    let rewritten = IMPORT.replace_all(text, |found: &regex::Captures<'_>| {
        let path = found.get(1).map_or("", |path| path.as_str());
        if !unknown(path) {
            return found[0].to_owned();
        }
        // The first unknown import brings in every reference not imported;
        // later ones become nothing (on their own lines, so lines keep their numbers).
        let replacement = if first {
            missing
                .iter()
                .map(|name| format!("import \"{name}\";"))
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            String::new()
        };
        first = false;
        replacement
    });
    Some(rewritten.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_that_names_no_file_brings_in_the_references() {
        let text = "syntax = \"proto3\";\nimport \"geo/place.proto\";\nimport \"google/protobuf/timestamp.proto\";\nmessage C {}\n";
        let rewritten = redirect_unknown_imports(text, &["place.proto", "other.proto"]).unwrap();
        assert_eq!(
            rewritten,
            "syntax = \"proto3\";\nimport \"place.proto\"; import \"other.proto\";\nimport \"google/protobuf/timestamp.proto\";\nmessage C {}\n"
        );
        assert_eq!(redirect_unknown_imports(text, &[]), None);
        let resolved = "import \"place.proto\";\nimport \"google/type/money.proto\";\n";
        assert_eq!(redirect_unknown_imports(resolved, &["place.proto"]), None);
    }
}
