//! Who writes the data and who reads it in one direction of a check, in
//! words, for the messages every format writes.

use super::Direction;

/// The two sides of one direction of a check against an earlier version.
pub(crate) struct Sides {
    pub(crate) direction: Direction,
    /// The number messages call the earlier version by.
    pub(crate) version: usize,
}

impl Sides {
    /// The schema whose data must be read: `version N` or `the new schema`.
    pub(crate) fn writer(&self) -> String {
        match self.direction {
            Direction::Backward => format!("version {}", self.version),
            Direction::Forward => "the new schema".to_owned(),
        }
    }

    /// The schema that reads it.
    pub(crate) fn reader(&self) -> String {
        match self.direction {
            Direction::Backward => "the new schema".to_owned(),
            Direction::Forward => format!("version {}", self.version),
        }
    }

    /// (earlier, new) from (reader, writer).
    pub(crate) fn old_new<T>(&self, reader: T, writer: T) -> (T, T) {
        match self.direction {
            Direction::Backward => (writer, reader),
            Direction::Forward => (reader, writer),
        }
    }

    /// Who breaks: "consumers using the new schema {verb} records written with version N".
    pub(crate) fn consequence(&self, verb: &str) -> String {
        match self.direction {
            Direction::Backward => {
                format!(
                    "consumers using the new schema {verb} records written with version {}",
                    self.version
                )
            }
            Direction::Forward => format!(
                "consumers still using version {} {verb} records written with the new schema",
                self.version
            ),
        }
    }
}
