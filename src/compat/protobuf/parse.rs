//! From what a client sends to compiled descriptors: `.proto` text or a
//! base64-encoded `FileDescriptorProto`, with its imports resolved through the
//! caller's references and the built-in well-known types, compiled by protox.
//!
//! Knows nothing of compatibility; every failure becomes a [`ParseError`]
//! that names the file and, where there is one, the line and column.

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};

use super::bundled::BundledFileResolver;
use super::{imports, nesting, unresolved_options, validate};
use crate::compat::SchemaText;

/// Why a Protobuf schema could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text or a file it imports is not valid Protobuf, or names
    /// something that does not exist; the place is known.
    #[error("{position}: {message}")]
    Invalid {
        /// Where the problem is.
        position: Position,
        /// What is wrong, in protox's words.
        message: String,
    },
    /// A problem in a file whose position is not known (a descriptor has no
    /// source text to point into).
    #[error("{file}: {message}")]
    InFile {
        /// The file with the problem.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// An import that is neither among the references nor a well-known type.
    #[error(
        "{position}: import `{import}` is not among the schema's references and is not a well-known \
         `google/protobuf/*.proto` file or one Confluent bundles (`google/type/*.proto`, `confluent/*.proto`)"
    )]
    MissingImport {
        /// Where the import statement is.
        position: Position,
        /// The imported name.
        import: String,
    },
    /// Files that import each other in a loop.
    #[error("import cycle: {cycle}")]
    ImportCycle {
        /// The files of the loop, as `a.proto -> b.proto -> a.proto`.
        cycle: String,
    },
    /// The schema looks like base64 but does not decode.
    #[error("{file}: not valid base64 and not `.proto` text: {message}")]
    InvalidBase64 {
        /// The file (the schema itself or a reference).
        file: String,
        /// What the decoder said.
        message: String,
    },
    /// The base64 decodes, but not to a `FileDescriptorProto`.
    #[error("{file}: the base64 bytes are not a serialized FileDescriptorProto: {message}")]
    InvalidDescriptor {
        /// The file (the schema itself or a reference).
        file: String,
        /// What the decoder said.
        message: String,
    },
}

/// A place in a `.proto` file: 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The file name: the schema itself is `schema.proto`, references go by their names.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// The name the schema itself compiles under, unless a reference already uses it.
const MAIN_FILE: &str = "schema.proto";

/// The compiled files: every file the schema needs, dependencies first, and
/// which one is the schema itself.
pub(crate) struct Compiled {
    pub(crate) pool: DescriptorPool,
    pub(crate) main: usize,
    /// For each file: its text as given (`None` for well-known files), to
    /// tell two imports of one name apart.
    pub(crate) sources: Vec<Option<String>>,
    /// Custom options no extension defines, as written, sorted (prefixed
    /// with their file when not in the schema itself).
    pub(crate) unresolved_options: Vec<String>,
}

/// Compiles `schema` with its references.
pub(crate) fn compile(schema: &SchemaText) -> Result<Compiled, ParseError> {
    let mut main_name = MAIN_FILE.to_owned();
    while schema.references.iter().any(|reference| reference.name == main_name) {
        main_name.insert(0, '_');
    }
    let mut texts: HashMap<String, String> = HashMap::new();
    for reference in &schema.references {
        texts.insert(reference.name.clone(), reference.text.clone());
    }
    let reference_names: Vec<&str> = schema
        .references
        .iter()
        .map(|reference| reference.name.as_str())
        .collect();
    let main_text = match imports::redirect_unknown_imports(&schema.text, &reference_names) {
        Some(redirected) if !looks_like_base64(&schema.text) => redirected,
        _ => schema.text.clone(),
    };
    texts.insert(main_name.clone(), main_text);
    let mut descriptors = HashMap::new();
    for (name, text) in &texts {
        if looks_like_base64(text) {
            descriptors.insert(name.clone(), decode_descriptor(name, text)?);
        } else if let Some((offset, found)) = nesting::hostile_at(text) {
            let message = match found {
                nesting::Hostile::TooDeep => too_deep_message(),
                nesting::Hostile::NameTooLong => format!(
                    "a name here is longer than {} bytes; schemaops refuses longer names",
                    nesting::MAX_NAME_BYTES
                ),
            };
            return Err(ParseError::Invalid {
                position: position_at(name, text, offset),
                message,
            });
        }
    }
    validate::check_type_kinds(descriptors.values()).map_err(|(file, message)| ParseError::InFile { file, message })?;

    let originals = texts.clone();
    let mut unresolved_options = Vec::new();
    let pool = loop {
        // Source positions cost about as much memory as the rest of the pool
        // and only errors read them: a failed compile is run again with them.
        let error = match compile_once(&texts, &descriptors, &main_name, SourceInfo::Drop)? {
            Ok(pool) => break pool,
            Err(_) => match compile_once(&texts, &descriptors, &main_name, SourceInfo::Keep)? {
                Ok(pool) => break pool,
                Err(error) => error,
            },
        };
        // An option whose extension nothing defines is kept as written and
        // cut from what is compiled; anything else is the schema's error.
        let cut = (unresolved_options.len() < MAX_UNRESOLVED_OPTIONS)
            .then(|| undefined_option(&error, &texts))
            .flatten();
        let Some((file, rest, written)) = cut else {
            return Err(convert(&error, &texts));
        };
        unresolved_options.push(if file == main_name {
            written
        } else {
            format!("{file}: {written}")
        });
        texts.insert(file, rest);
    };
    unresolved_options.sort();
    let main = pool
        .files()
        .position(|file| file.name() == main_name)
        .unwrap_or(pool.files().len().saturating_sub(1));
    let sources = pool.files().map(|file| originals.get(file.name()).cloned()).collect();
    Ok(Compiled {
        pool,
        main,
        sources,
        unresolved_options,
    })
}

/// How many undefined custom options one schema may carry.
const MAX_UNRESOLVED_OPTIONS: usize = 32;

/// Whether a compile keeps the `.proto` texts' source positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SourceInfo {
    /// Kept: errors point at a line and column.
    Keep,
    /// Dropped after parsing each text: the pool is about half the size.
    Drop,
}

/// One compiler run over `texts`: the pool, or the compiler's error.
fn compile_once(
    texts: &HashMap<String, String>,
    descriptors: &HashMap<String, FileDescriptorProto>,
    main_name: &str,
    source_info: SourceInfo,
) -> Result<Result<DescriptorPool, protox::Error>, ParseError> {
    let mut resolver = ChainFileResolver::new();
    resolver.add(Memory {
        texts: texts.clone(),
        descriptors: descriptors.clone(),
        source_info,
    });
    resolver.add(GoogleFileResolver::new());
    resolver.add(BundledFileResolver);
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    // The checks above leave nothing known to panic the compiler; should
    // anything still, the schema is refused instead of the process failing.
    let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        compiler.open_file(main_name)?;
        Ok::<_, protox::Error>(compiler.descriptor_pool())
    }));
    compiled.map_err(|_| ParseError::InFile {
        file: main_name.to_owned(),
        message: "the Protobuf compiler failed on this schema (a defect in schemaops; please report it)".to_owned(),
    })
}

/// For an "is not defined" error inside a custom option's name: the file,
/// its text without that option, and the option as written.
fn undefined_option(error: &protox::Error, texts: &HashMap<String, String>) -> Option<(String, String, String)> {
    if !error.to_string().ends_with("is not defined") {
        return None;
    }
    let file = error.file()?.to_owned();
    let text = texts.get(&file).filter(|text| !looks_like_base64(text))?;
    let offset = miette::Diagnostic::labels(error)?.next()?.offset();
    let (rest, written) = unresolved_options::cut_option_at(text, offset)?;
    Some((file, rest, written))
}

/// The caller's files by name: `.proto` source, or descriptors decoded from base64.
struct Memory {
    texts: HashMap<String, String>,
    descriptors: HashMap<String, FileDescriptorProto>,
    source_info: SourceInfo,
}

impl FileResolver for Memory {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if let Some(descriptor) = self.descriptors.get(name) {
            return Ok(File::from_file_descriptor_proto(descriptor.clone()));
        }
        let Some(text) = self.texts.get(name) else {
            return Err(protox::Error::file_not_found(name));
        };
        match self.source_info {
            SourceInfo::Keep => File::from_source(name, text),
            SourceInfo::Drop => {
                let mut descriptor = protox_parse::parse(name, text)?;
                descriptor.source_code_info = None;
                Ok(File::from_file_descriptor_proto(descriptor))
            }
        }
    }
}

/// Decodes a base64 `FileDescriptorProto`, renamed to `name` so that imports
/// find it by the name the caller gave it.
fn decode_descriptor(name: &str, text: &str) -> Result<FileDescriptorProto, ParseError> {
    let bytes = decode_base64(text).map_err(|message| ParseError::InvalidBase64 {
        file: name.to_owned(),
        message,
    })?;
    let mut descriptor =
        FileDescriptorProto::decode(bytes.as_slice()).map_err(|error| ParseError::InvalidDescriptor {
            file: name.to_owned(),
            message: error.to_string(),
        })?;
    if nesting::descriptor_too_deep(&descriptor) {
        return Err(ParseError::InFile {
            file: name.to_owned(),
            message: too_deep_message(),
        });
    }
    validate::check_descriptor(&descriptor).map_err(|message| ParseError::InFile {
        file: name.to_owned(),
        message,
    })?;
    descriptor.name = Some(name.to_owned());
    // descriptor.proto reads an empty `syntax` as proto2, as protoc and
    // Confluent's Java library do; the descriptor pool only knows an absent
    // one, and on "" panics while building its error.
    if descriptor.syntax.as_deref() == Some("") {
        descriptor.syntax = None;
    }
    Ok(descriptor)
}

fn too_deep_message() -> String {
    format!(
        "nests more than {} levels deep (messages, option values or brackets); \
         schemaops refuses deeper nesting",
        nesting::MAX_NESTING
    )
}

/// True when the text has only base64 characters: no `.proto` text does,
/// since every declaration needs a `;`, a brace or a space.
/// Whether a Protobuf schema is sent as base64 (a serialized
/// `FileDescriptorProto`) rather than `.proto` text.
pub fn looks_like_base64(text: &str) -> bool {
    let trimmed = text.trim();
    !trimmed.is_empty()
        && trimmed.bytes().all(|byte| {
            byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n' | b'\r')
        })
}

fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let standard = base64::engine::general_purpose::STANDARD.decode(&compact);
    standard
        .or_else(|error| {
            base64::engine::general_purpose::URL_SAFE
                .decode(&compact)
                .map_err(|_| error.to_string())
        })
        .map_err(|message| message.to_string())
}

/// A protox error as a [`ParseError`], with a line and column worked out
/// from the error's span in the file's text.
fn convert(error: &protox::Error, texts: &HashMap<String, String>) -> ParseError {
    let message = error.to_string();
    if let Some(cycle) = message.strip_prefix("import cycle detected: ") {
        return ParseError::ImportCycle {
            cycle: cycle.to_owned(),
        };
    }
    let file = error.file().unwrap_or(MAIN_FILE).to_owned();
    let offset = miette::Diagnostic::labels(error)
        .and_then(|mut labels| labels.next())
        .map(|label| label.offset());
    let position = offset.and_then(|offset| {
        let text = texts.get(&file)?;
        (!looks_like_base64(text)).then(|| position_at(&file, text, offset))
    });
    match position {
        Some(position) => {
            if let Some(import) = message
                .strip_prefix("import '")
                .and_then(|rest| rest.strip_suffix("' not found"))
            {
                return ParseError::MissingImport {
                    position,
                    import: import.to_owned(),
                };
            }
            // Name-resolution errors already start with `file:line:column: `.
            let prefix = format!("{}:", position.file);
            let message = match message.strip_prefix(&prefix) {
                Some(rest) => rest
                    .splitn(3, ':')
                    .nth(2)
                    .map_or(message.clone(), |text| text.trim().to_owned()),
                None => message,
            };
            ParseError::Invalid { position, message }
        }
        None => ParseError::InFile { file, message },
    }
}

/// The 1-based line and column of byte `offset` in `text`.
fn position_at(file: &str, text: &str, offset: usize) -> Position {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let column = before.get(line_start..).map_or(0, |rest| rest.chars().count()) + 1;
    Position {
        file: file.to_owned(),
        line,
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        let text = "syntax = \"proto3\";\nmessage é {\n  x";
        let position = position_at("a.proto", text, text.len() - 1);
        assert_eq!((position.line, position.column), (3, 3));
        assert_eq!(position.to_string(), "a.proto:3:3");
        assert_eq!(position_at("a.proto", text, 0).to_string(), "a.proto:1:1");
        assert_eq!(position_at("a.proto", text, 10_000).line, 3);
    }

    #[test]
    fn only_text_of_base64_characters_is_taken_for_a_descriptor() {
        assert!(looks_like_base64("Cg1leC91c2VyLnByb3Rv\nEgJleA=="));
        assert!(!looks_like_base64("syntax = \"proto3\";"));
        assert!(!looks_like_base64("message A {}"));
        assert!(!looks_like_base64("  "));
    }
}
