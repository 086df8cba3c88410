//! Where in a schema something is: [`SchemaPath`], an RFC 6901 JSON Pointer, and
//! [`Location`], the allocation-free form a checker carries while it walks.

use std::fmt;

use serde::{Serialize, Serializer};

/// One step of a [`SchemaPath`]: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// An array position, such as the `3` in `/fields/3`.
    Index(usize),
    /// An object key, such as `fields` or `type`.
    Key(String),
}

/// A JSON Pointer (RFC 6901) into a schema document, such as `/fields/3/type`.
///
/// The root is written `/`, as Avro and Confluent write it, rather than the
/// empty string of the RFC. `~` and `/` inside keys are escaped as `~0` and `~1`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SchemaPath(Vec<Segment>);

impl SchemaPath {
    /// The path of the whole document.
    pub fn root() -> Self {
        Self::default()
    }

    /// The steps from the root, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// This path extended by an object key.
    pub fn key(mut self, key: &str) -> Self {
        self.0.push(Segment::Key(key.to_owned()));
        self
    }

    /// This path extended by an array index.
    pub fn index(mut self, index: usize) -> Self {
        self.0.push(Segment::Index(index));
        self
    }

    /// The same place in Confluent's notation: `#/fields/3/type`.
    pub fn to_confluent(&self) -> String {
        if self.0.is_empty() {
            "#/".to_owned()
        } else {
            format!("#{self}")
        }
    }
}

impl fmt::Display for SchemaPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("/");
        }
        for segment in &self.0 {
            f.write_str("/")?;
            match segment {
                Segment::Index(index) => write!(f, "{index}")?,
                Segment::Key(key) => f.write_str(&key.replace('~', "~0").replace('/', "~1"))?,
            }
        }
        Ok(())
    }
}

impl Serialize for SchemaPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A place in a schema while a walk is under way: a chain of borrowed steps
/// that lives on the walker's stack, so descending costs no allocation and
/// can never forget to pop. Turned into a [`SchemaPath`] only when something
/// is reported.
#[derive(Debug, Clone, Copy)]
pub struct Location<'a> {
    parent: Option<&'a Location<'a>>,
    step: Step<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Location<'a> {
    /// The root of the document.
    pub const ROOT: Location<'static> = Location {
        parent: None,
        step: Step::Root,
    };

    /// One object key further down.
    pub fn key(&'a self, key: &'a str) -> Location<'a> {
        Location {
            parent: Some(self),
            step: Step::Key(key),
        }
    }

    /// One array index further down.
    pub fn index(&'a self, index: usize) -> Location<'a> {
        Location {
            parent: Some(self),
            step: Step::Index(index),
        }
    }

    /// The owned path of this place.
    pub fn to_path(&self) -> SchemaPath {
        let mut segments = Vec::new();
        let mut current = Some(self);
        while let Some(location) = current {
            match location.step {
                Step::Root => {}
                Step::Key(key) => segments.push(Segment::Key(key.to_owned())),
                Step::Index(index) => segments.push(Segment::Index(index)),
            }
            current = location.parent;
        }
        segments.reverse();
        SchemaPath(segments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_written_as_a_single_slash() {
        assert_eq!(SchemaPath::root().to_string(), "/");
        assert_eq!(SchemaPath::root().to_confluent(), "#/");
    }

    #[test]
    fn keys_are_escaped_as_rfc_6901_requires() {
        let path = SchemaPath::root().key("a/b").key("c~d").index(2);
        assert_eq!(path.to_string(), "/a~1b/c~0d/2");
        assert_eq!(path.to_confluent(), "#/a~1b/c~0d/2");
    }

    #[test]
    fn a_location_chain_becomes_the_same_path() {
        let root = Location::ROOT;
        let fields = root.key("fields");
        let third = fields.index(3);
        let ty = third.key("type");
        assert_eq!(ty.to_path(), SchemaPath::root().key("fields").index(3).key("type"));
        assert_eq!(ty.to_path().to_string(), "/fields/3/type");
    }
}
