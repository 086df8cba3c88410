//! Support for `tests/docs_book.rs`: the reference pages generated from the
//! code, and the links and heading ids of Markdown text.

pub mod links;
pub mod reference;
