//! Hostile schema shapes shared by the budget tests and `benches/hostile.rs`
//! (which includes this file on its own, so it uses no other support module).

/// A `.proto` of about `bytes` bytes: messages of 40 string fields.
pub fn large_proto(bytes: usize) -> String {
    let mut text = String::from("syntax = \"proto3\";\npackage hostile;\n");
    let mut message = 0;
    while text.len() < bytes {
        text.push_str(&format!("message M{message} {{\n"));
        for field in 0..40 {
            text.push_str(&format!(
                "  string field_{field}_of_message_{message} = {};\n",
                field + 1
            ));
        }
        text.push_str("}\n");
        message += 1;
    }
    text
}

/// A JSON Schema of about `fields` integer (or, with `as_string`, string)
/// properties spread over objects nested `depth` deep: every property
/// changes type between the two texts, so each is a finding with a path
/// `depth` segments long (issue 37, item 1: 10,000 such changes 330 deep
/// made a matrix answer of 527 MB and peaks of several GB; JSON Schema
/// documents may nest 128 JSON levels, so callers use 60 objects).
pub fn deep_changes(fields: usize, depth: usize, as_string: bool) -> String {
    let kind = if as_string { "string" } else { "integer" };
    let per_level = fields.div_ceil(depth);
    let mut schema = serde_json::json!({"type": "object", "properties": {}});
    for level in (0..depth).rev() {
        let mut properties: serde_json::Map<String, serde_json::Value> = (0..per_level)
            .map(|field| (format!("l{level}f{field}"), serde_json::json!({ "type": kind })))
            .collect();
        properties.insert("next".to_owned(), schema);
        schema = serde_json::json!({"type": "object", "properties": properties});
    }
    schema.to_string()
}
