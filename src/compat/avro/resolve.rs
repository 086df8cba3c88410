//! Avro schema resolution as a compatibility check: can a reader schema read
//! every datum a writer schema can write? Follows Java Avro's
//! `SchemaCompatibility` (which Confluent calls) rule for rule and location
//! for location, but gathers every problem instead of stopping at the first.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

use super::model::{AvroSchema, Name, NodeId, Primitive, Record, Type};
use crate::compat::stack::{deep, walk};
use crate::compat::{Location, SchemaPath};

/// Where in the reader's records a finding is: the innermost record being
/// walked and, when inside one, the field whose type is being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Place {
    /// The record's full name.
    pub(crate) record: String,
    /// The field's name.
    pub(crate) field: Option<String>,
}

/// One resolution failure, with the facts a message needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding {
    /// Two named types whose names differ, with no reader alias for the writer's name.
    NameMismatch {
        reader: String,
        writer: String,
        place: Option<Place>,
    },
    /// A reader field that matches several writer fields through its aliases.
    AmbiguousField { field: String, writer_fields: Vec<String> },
    /// Two fixed types of different sizes.
    FixedSizeMismatch { name: String, reader: u64, writer: u64 },
    /// Writer enum symbols the reader lacks, with no reader default symbol.
    MissingEnumSymbols { name: String, symbols: Vec<String> },
    /// A reader field the writer does not have, with no default.
    MissingDefault { field: String, record: String },
    /// Types that do not resolve and are not promotable.
    TypeMismatch {
        reader: String,
        writer: String,
        place: Option<Place>,
    },
    /// A writer type that no branch of the reader's union reads, and why the
    /// closest branch could not.
    MissingUnionBranch {
        writer: String,
        causes: Vec<(SchemaPath, Finding)>,
        place: Option<Place>,
    },
}

/// Every way in which `reader` fails to read data written with `writer`,
/// located in the reader's structure as Java Avro locates them.
pub(crate) fn findings(reader: &AvroSchema, writer: &AvroSchema) -> Vec<(SchemaPath, Finding)> {
    let mut resolver = Resolver {
        reader,
        writer,
        walked: FxHashSet::default(),
        probes: FxHashMap::default(),
        unions: FxHashMap::default(),
        places: Vec::new(),
        found: Vec::new(),
    };
    // Resolution descends both schemas at once, one of them at a time
    // through unions.
    walk(reader.nesting + writer.nesting, || {
        resolver.collect(reader.root, writer.root, &Location::ROOT);
    });
    resolver.found
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    InProgress,
    Compatible,
    Incompatible,
}

struct Resolver<'s> {
    reader: &'s AvroSchema,
    writer: &'s AvroSchema,
    /// Record pairs already walked by `collect`: a recursive or repeated pair
    /// is reported once, where it is first met.
    walked: FxHashSet<(NodeId, NodeId)>,
    /// Memoized yes/no answers for record pairs, used when trying union branches.
    probes: FxHashMap<(NodeId, NodeId), Probe>,
    /// The reader unions met so far, indexed by branch name.
    unions: FxHashMap<NodeId, UnionIndex>,
    /// The reader records (and field positions) `collect` is inside,
    /// innermost last; a [`Place`] is built from them only for a finding.
    places: Vec<(&'s Record, Option<usize>)>,
    found: Vec<(SchemaPath, Finding)>,
}

/// A reader union's branches by the names a writer type could match them
/// with (each named branch's simple name and its aliases), and its unnamed
/// branches: a writer branch is tried only against the branches that could
/// read it, so matching two unions of n records costs n, not n².
#[derive(Default)]
struct UnionIndex {
    /// Positions of named branches by simple name or full alias.
    named: FxHashMap<String, Vec<usize>>,
    /// Positions of unnamed branches (primitives, arrays, maps).
    unnamed: Vec<usize>,
}

impl<'s> Resolver<'s> {
    /// Where `collect` is, for a finding.
    fn place(&self) -> Option<Place> {
        self.places.last().map(|(record, field)| Place {
            record: record.name.full.clone(),
            field: field.map(|position| record.field_name(position).to_owned()),
        })
    }

    fn report(&mut self, location: &Location<'_>, finding: Finding) {
        self.found.push((location.to_path(), finding));
    }

    /// The branches of the reader union `union` that could read `writer`,
    /// in the union's order (the first that reads it is the one chosen).
    fn union_candidates(&mut self, union: NodeId, writer: NodeId) -> Vec<NodeId> {
        let reader = self.reader;
        let Type::Union(branches) = reader.ty(union) else {
            return vec![union];
        };
        let index = self.unions.entry(union).or_insert_with(|| {
            let mut index = UnionIndex::default();
            for (position, &branch) in branches.iter().enumerate() {
                match reader.ty(branch).name() {
                    Some(name) => {
                        index.named.entry(name.simple().to_owned()).or_default().push(position);
                        for alias in &name.aliases {
                            index.named.entry(alias.clone()).or_default().push(position);
                        }
                    }
                    None => index.unnamed.push(position),
                }
            }
            index
        });
        let mut positions: Vec<usize> = match self.writer.ty(writer).name() {
            Some(name) => [name.simple(), name.full.as_str()]
                .iter()
                .filter_map(|key| index.named.get(*key))
                .flatten()
                .copied()
                .collect(),
            None => index.unnamed.clone(),
        };
        positions.sort_unstable();
        positions.dedup();
        positions.into_iter().map(|position| branches[position]).collect()
    }

    /// Walks `reader` against `writer`, recording every failure.
    fn collect(&mut self, reader: NodeId, writer: NodeId, location: &Location<'_>) {
        deep(|| self.collect_here(reader, writer, location));
    }

    fn collect_here(&mut self, reader: NodeId, writer: NodeId, location: &Location<'_>) {
        let (reader_schema, writer_schema) = (self.reader, self.writer);
        if reader_schema.same_as(reader, writer_schema, writer) {
            // A type reads itself without a finding; most of two versions is the same.
            return;
        }
        match (reader_schema.ty(reader), writer_schema.ty(writer)) {
            (Type::Primitive(r), Type::Primitive(w)) if r == w || promotes(*w, *r) => {}
            (Type::Array(r), Type::Array(w)) => self.collect(*r, *w, &location.key("items")),
            (Type::Map(r), Type::Map(w)) => self.collect(*r, *w, &location.key("values")),
            (Type::Fixed(r), Type::Fixed(w)) => {
                self.check_names(&r.name, &w.name, location);
                if r.size != w.size {
                    let finding = Finding::FixedSizeMismatch {
                        name: r.name.full.clone(),
                        reader: r.size,
                        writer: w.size,
                    };
                    self.report(&location.key("size"), finding);
                }
            }
            (Type::Enum(r), Type::Enum(w)) => {
                self.check_names(&r.name, &w.name, location);
                if r.default.is_none() {
                    let missing: BTreeSet<&String> = symbols_missing(&r.symbols, &w.symbols).collect();
                    if !missing.is_empty() {
                        let finding = Finding::MissingEnumSymbols {
                            name: r.name.full.clone(),
                            symbols: missing.into_iter().cloned().collect(),
                        };
                        self.report(&location.key("symbols"), finding);
                    }
                }
            }
            (Type::Record(r), Type::Record(w)) => {
                if self.walked.insert((reader, writer)) {
                    // While the pair is being walked, a union branch that leads
                    // back to it counts as readable, as in Java Avro: the problem
                    // is reported once, inside the pair itself.
                    let mark = self.found.len();
                    self.probes.entry((reader, writer)).or_insert(Probe::InProgress);
                    self.check_names(&r.name, &w.name, location);
                    self.check_fields(r, w, location);
                    let answer = if self.found.len() == mark {
                        Probe::Compatible
                    } else {
                        Probe::Incompatible
                    };
                    self.probes.insert((reader, writer), answer);
                }
            }
            (Type::Union(_), Type::Union(writer_branches)) => {
                for (index, &branch) in writer_branches.iter().enumerate() {
                    if !self.probe(reader, branch) {
                        let branch_location = location.index(index);
                        let causes = self.explain(reader, branch, location);
                        let finding = Finding::MissingUnionBranch {
                            writer: writer_schema.describe(branch),
                            causes,
                            place: self.place(),
                        };
                        self.report(&branch_location, finding);
                    }
                }
            }
            (_, Type::Union(writer_branches)) => {
                for (index, &branch) in writer_branches.iter().enumerate() {
                    self.collect(reader, branch, &location.index(index));
                }
            }
            (Type::Union(_), _) => {
                let candidates = self.union_candidates(reader, writer);
                if !candidates.into_iter().any(|branch| self.probe(branch, writer)) {
                    let causes = self.explain(reader, writer, location);
                    let finding = Finding::MissingUnionBranch {
                        writer: writer_schema.describe(writer),
                        causes,
                        place: self.place(),
                    };
                    self.report(location, finding);
                }
            }
            _ => {
                let finding = Finding::TypeMismatch {
                    reader: reader_schema.describe(reader),
                    writer: writer_schema.describe(writer),
                    place: self.place(),
                };
                self.report(location, finding);
            }
        }
    }

    fn check_names(&mut self, reader: &Name, writer: &Name, location: &Location<'_>) {
        if !names_match(reader, writer) {
            let finding = Finding::NameMismatch {
                reader: reader.full.clone(),
                writer: writer.full.clone(),
                place: self.place(),
            };
            self.report(&location.key("name"), finding);
        }
    }

    fn check_fields(&mut self, reader: &'s Record, writer: &'s Record, location: &Location<'_>) {
        let fields_location = location.key("fields");
        self.places.push((reader, None));
        let mut index = 0;
        while index < reader.fields.len() {
            let unchanged_until = self.unchanged_fields_until(reader, writer, index);
            if unchanged_until > index {
                index = unchanged_until;
                continue;
            }
            let field = &reader.fields[index];
            let field_location = fields_location.index(index);
            match writer_fields(reader, index, writer) {
                Matches::None if field.default().is_none() => {
                    let finding = Finding::MissingDefault {
                        field: reader.field_name(index).to_owned(),
                        record: reader.name.full.clone(),
                    };
                    self.report(&field_location, finding);
                }
                Matches::None => {}
                Matches::One(only) => {
                    if let Some(place) = self.places.last_mut() {
                        place.1 = Some(index);
                    }
                    self.collect(field.ty, writer.fields[only].ty, &field_location.key("type"));
                    if let Some(place) = self.places.last_mut() {
                        place.1 = None;
                    }
                }
                Matches::Several(several) => {
                    let finding = Finding::AmbiguousField {
                        field: reader.field_name(index).to_owned(),
                        writer_fields: several.iter().map(|i| writer.field_name(*i).to_owned()).collect(),
                    };
                    self.report(&field_location, finding);
                }
            }
            index += 1;
        }
        self.places.pop();
    }

    /// The end of the run of fields from `start` that read themselves: the
    /// same name at the same position in both records, and types of equal
    /// digests. Versions mostly share long runs of such fields, which this
    /// passes over in one step.
    fn unchanged_fields_until(&self, reader: &Record, writer: &Record, start: usize) -> usize {
        let (reader_schema, writer_schema) = (self.reader, self.writer);
        reader.same_fields_until(writer, start, |mine, theirs| {
            reader_schema.same_as(mine, writer_schema, theirs)
        })
    }

    /// Whether `reader` reads `writer`, without recording anything: used to
    /// try the branches of a union.
    fn probe(&mut self, reader: NodeId, writer: NodeId) -> bool {
        deep(|| self.probe_here(reader, writer))
    }

    fn probe_here(&mut self, reader: NodeId, writer: NodeId) -> bool {
        let (reader_schema, writer_schema) = (self.reader, self.writer);
        if reader_schema.same_as(reader, writer_schema, writer) {
            return true;
        }
        match (reader_schema.ty(reader), writer_schema.ty(writer)) {
            (Type::Primitive(r), Type::Primitive(w)) => r == w || promotes(*w, *r),
            (Type::Array(r), Type::Array(w)) | (Type::Map(r), Type::Map(w)) => self.probe(*r, *w),
            (Type::Fixed(r), Type::Fixed(w)) => names_match(&r.name, &w.name) && r.size == w.size,
            (Type::Enum(r), Type::Enum(w)) => {
                names_match(&r.name, &w.name)
                    && (r.default.is_some() || symbols_missing(&r.symbols, &w.symbols).next().is_none())
            }
            (Type::Record(r), Type::Record(w)) if !names_match(&r.name, &w.name) => false,
            (Type::Record(r), Type::Record(w)) => match self.probes.get(&(reader, writer)) {
                Some(Probe::InProgress | Probe::Compatible) => true,
                Some(Probe::Incompatible) => false,
                None => {
                    self.probes.insert((reader, writer), Probe::InProgress);
                    let compatible = self.probe_fields(r, w);
                    let answer = if compatible {
                        Probe::Compatible
                    } else {
                        Probe::Incompatible
                    };
                    self.probes.insert((reader, writer), answer);
                    compatible
                }
            },
            (_, Type::Union(writer_branches)) => writer_branches.iter().all(|&branch| self.probe(reader, branch)),
            (Type::Union(_), _) => {
                let candidates = self.union_candidates(reader, writer);
                candidates.into_iter().any(|branch| self.probe(branch, writer))
            }
            _ => false,
        }
    }

    fn probe_fields(&mut self, reader: &Record, writer: &Record) -> bool {
        let mut position = 0;
        while position < reader.fields.len() {
            let unchanged_until = self.unchanged_fields_until(reader, writer, position);
            if unchanged_until > position {
                position = unchanged_until;
                continue;
            }
            let field = &reader.fields[position];
            let readable = match writer_fields(reader, position, writer) {
                Matches::None => field.default().is_some(),
                Matches::One(only) => self.probe(field.ty, writer.fields[only].ty),
                Matches::Several(_) => false,
            };
            if !readable {
                return false;
            }
            position += 1;
        }
        true
    }

    /// Why no branch of the reader union `reader` reads `writer`: the
    /// failures of the branch that resembles it most (same name, or same
    /// kind of type), located at that branch. Empty when no branch resembles it.
    fn explain(&mut self, reader: NodeId, writer: NodeId, location: &Location<'_>) -> Vec<(SchemaPath, Finding)> {
        let Type::Union(branches) = self.reader.ty(reader) else {
            return Vec::new();
        };
        let Some(index) = branches
            .iter()
            .position(|&branch| resembles(self.reader, branch, self.writer, writer))
        else {
            return Vec::new();
        };
        let mark = self.found.len();
        self.collect(branches[index], writer, &location.index(index));
        self.found.split_off(mark)
    }
}

/// Avro's promotions: what a reader of type `reader` accepts from a writer of type `writer`.
fn promotes(writer: Primitive, reader: Primitive) -> bool {
    use Primitive::{Bytes, Double, Float, Int, Long, String};
    matches!(
        (writer, reader),
        (Int, Long | Float | Double) | (Long, Float | Double) | (Float, Double) | (String, Bytes) | (Bytes, String)
    )
}

/// Java Avro compares unqualified names, or the writer's full name against the reader's aliases.
fn names_match(reader: &Name, writer: &Name) -> bool {
    reader.simple() == writer.simple() || reader.aliases.contains(&writer.full)
}

/// The writer fields that a reader field reads.
enum Matches {
    None,
    One(usize),
    /// Several, through aliases: ambiguous (Java Avro throws there).
    Several(Vec<usize>),
}

/// The writer fields that the reader's field at `position` reads: the field
/// of the same name, or else every field named by one of its aliases.
fn writer_fields(reader: &Record, position: usize, writer: &Record) -> Matches {
    let name = reader.field_name(position);
    // Schemas mostly evolve by appending, so the same position usually holds the same field.
    if position < writer.fields.len() && writer.field_name(position) == name {
        return Matches::One(position);
    }
    if let Some(found) = writer.position(name) {
        return Matches::One(found);
    }
    let mut found: Vec<usize> = Vec::new();
    for alias in reader.fields[position].aliases() {
        if let Some(at) = writer.position(alias)
            && !found.contains(&at)
        {
            found.push(at);
        }
    }
    match found.as_slice() {
        [] => Matches::None,
        [only] => Matches::One(*only),
        _ => Matches::Several(found),
    }
}

/// Whether two types are "the same thing, changed": same name, or the same kind of unnamed type.
fn resembles(reader: &AvroSchema, reader_id: NodeId, writer: &AvroSchema, writer_id: NodeId) -> bool {
    match (reader.ty(reader_id), writer.ty(writer_id)) {
        (Type::Record(r), Type::Record(w)) => names_match(&r.name, &w.name),
        (Type::Enum(r), Type::Enum(w)) => names_match(&r.name, &w.name),
        (Type::Fixed(r), Type::Fixed(w)) => names_match(&r.name, &w.name),
        (Type::Array(_), Type::Array(_)) | (Type::Map(_), Type::Map(_)) => true,
        _ => false,
    }
}

/// The writer's enum symbols the reader lacks, in the writer's order. The
/// usual evolution appends symbols, so when the writer's list starts the
/// reader's nothing is missing and no set is built.
fn symbols_missing<'a>(reader: &'a [String], writer: &'a [String]) -> impl Iterator<Item = &'a String> + 'a {
    let known: Option<FxHashSet<&String>> = if reader.starts_with(writer) {
        None
    } else {
        Some(reader.iter().collect())
    };
    writer
        .iter()
        .filter(move |symbol| known.as_ref().is_some_and(|known| !known.contains(symbol)))
}
