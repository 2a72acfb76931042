//! How deep llguidance may recurse compiling a JSON schema: the heaviest path through the
//! schema's objects and arrays, where a `$ref` leads to the part it names.

use std::collections::HashMap;

use serde_json::Value;

use super::graph::heaviest_path;

/// The heaviest path through the objects and arrays of `schema`, each weighing 1, with an
/// edge from each to the objects and arrays it holds and from an object with `"$ref"` to the
/// part the reference names. A path entering a cycle (a recursive schema) is charged every
/// node of the cycle, so the measure bounds every order of walking the schema.
///
/// References are resolved as llguidance resolves them within one document: `#` and
/// `#/json/pointer`, `#name` by `$anchor`, and other URIs by a `$id` that equals them or ends
/// with them (with a `#/pointer` fragment from there). A reference that names nothing here is
/// a leaf (llguidance refuses it or resolves it to a document outside this one).
pub fn schema_depth(schema: &Value) -> usize {
    let nodes = Nodes::of(schema);
    let mut edges = vec![Vec::new(); nodes.values.len()];
    for (i, value) in nodes.values.iter().enumerate() {
        match value {
            Value::Object(map) => {
                for child in map.values() {
                    if let Some(c) = nodes.index(child) {
                        edges[i].push(c);
                    }
                }
                if let Some(Value::String(target)) = map.get("$ref") {
                    if let Some(t) = nodes.resolve(schema, target) {
                        edges[i].push(t);
                    }
                }
            }
            Value::Array(items) => {
                edges[i].extend(items.iter().filter_map(|child| nodes.index(child)));
            }
            _ => {}
        }
    }
    heaviest_path(&edges, &vec![1; nodes.values.len()])
}

/// Every object and array of a document, numbered, with the `$id`s and `$anchor`s that name
/// them.
struct Nodes<'a> {
    values: Vec<&'a Value>,
    number: HashMap<*const Value, usize>,
    ids: Vec<(&'a str, usize)>,
    anchors: HashMap<&'a str, usize>,
}

impl<'a> Nodes<'a> {
    /// Walks `root` without recursion.
    fn of(root: &'a Value) -> Self {
        let mut nodes = Nodes {
            values: Vec::new(),
            number: HashMap::new(),
            ids: Vec::new(),
            anchors: HashMap::new(),
        };
        let mut todo = vec![root];
        while let Some(value) = todo.pop() {
            let children: Box<dyn Iterator<Item = &Value>> = match value {
                Value::Object(map) => Box::new(map.values()),
                Value::Array(items) => Box::new(items.iter()),
                _ => continue,
            };
            let i = nodes.values.len();
            nodes.values.push(value);
            nodes.number.insert(value as *const Value, i);
            if let Value::Object(map) = value {
                if let Some(Value::String(id)) = map.get("$id") {
                    nodes.ids.push((id.as_str(), i));
                }
                if let Some(Value::String(anchor)) = map.get("$anchor") {
                    nodes.anchors.insert(anchor.as_str(), i);
                }
            }
            todo.extend(children);
        }
        nodes
    }

    /// The number of `value`, when it is an object or an array of the document.
    fn index(&self, value: &Value) -> Option<usize> {
        self.number.get(&(value as *const Value)).copied()
    }

    /// The node a `$ref` names, if it is in this document.
    fn resolve(&self, root: &Value, target: &str) -> Option<usize> {
        let (base, fragment) = match target.split_once('#') {
            Some((base, fragment)) => (base, fragment),
            None => (target, ""),
        };
        let from = if base.is_empty() {
            root
        } else {
            let &(_, i) = self
                .ids
                .iter()
                .find(|(id, _)| *id == base || id.ends_with(&format!("/{base}")))?;
            self.values[i]
        };
        if fragment.is_empty() || fragment.starts_with('/') {
            self.index(from.pointer(fragment)?)
        } else {
            self.anchors.get(fragment).copied()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::schema_depth;

    /// `{"$ref": "#/$defs/r0", "$defs": {"r0": {"$ref": "#/$defs/r1"}, …, "rN": {"type": …}}}`
    fn ref_chain(n: usize) -> serde_json::Value {
        let mut defs = serde_json::Map::new();
        for i in 0..n {
            defs.insert(
                format!("r{i}"),
                json!({"$ref": format!("#/$defs/r{}", i + 1)}),
            );
        }
        defs.insert(format!("r{n}"), json!({"type": "integer"}));
        json!({"$ref": "#/$defs/r0", "$defs": defs})
    }

    #[test]
    fn nesting_counts_every_object_and_array() {
        assert_eq!(schema_depth(&json!({"type": "integer"})), 1);
        assert_eq!(
            schema_depth(&json!({"type": "object", "properties": {"a": {"type": "integer"}}})),
            3
        );
        assert_eq!(schema_depth(&json!({"anyOf": [{"type": "null"}]})), 3);
    }

    #[test]
    fn a_reference_chain_is_as_deep_as_it_is_long() {
        // The root, `$defs` and the N + 1 definitions in a row.
        assert_eq!(schema_depth(&ref_chain(700)), 703);
        // In reverse order of definition too.
        let mut defs = serde_json::Map::new();
        for i in (0..50).rev() {
            defs.insert(
                format!("r{i}"),
                json!({"$ref": format!("#/$defs/r{}", i + 1)}),
            );
        }
        defs.insert("r50".into(), json!({}));
        assert!(schema_depth(&json!({"$ref": "#/$defs/r0", "$defs": defs})) >= 51);
    }

    #[test]
    fn references_resolve_by_pointer_anchor_and_id() {
        let by_anchor = json!({
            "$ref": "#a0",
            "$defs": {"x": {"$anchor": "a0", "$ref": "#a1"}, "y": {"$anchor": "a1", "$ref": "#a2"},
                      "z": {"$anchor": "a2", "items": {"items": {}}}}
        });
        assert_eq!(schema_depth(&by_anchor), 2 + 3 + 2);
        let by_id = json!({
            "$ref": "https://example.com/one",
            "$defs": {"x": {"$id": "https://example.com/one", "$ref": "two"},
                      "y": {"$id": "https://example.com/two", "$ref": "two#/items"}},
            "items": {}
        });
        // root -> x -> y -> y's `items`? y names itself with a pointer into its own missing
        // `items`: a leaf. root, $defs, x, y.
        assert_eq!(schema_depth(&by_id), 4);
    }

    #[test]
    fn recursive_schemas_weigh_their_cycle_once() {
        let tree = json!({
            "$ref": "#/$defs/node",
            "$defs": {"node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}
        });
        // node -> properties -> children -> items -> node: one cycle of four, entered from
        // the root through `$defs`.
        assert_eq!(schema_depth(&tree), 2 + 4);
        assert_eq!(schema_depth(&json!({"$ref": "#"})), 1);
    }
}
