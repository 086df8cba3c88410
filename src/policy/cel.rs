//! CEL validations, with the `cel` crate (cel-rust: a maintained,
//! pure-Rust parser and interpreter of the Common Expression Language, the
//! language of Kubernetes' ValidatingAdmissionPolicy).
//!
//! An expression is bounded before it is parsed: at most
//! [`MAX_EXPRESSION_BYTES`] long and [`MAX_EXPRESSION_NESTING`] brackets
//! deep, so neither the parser's recursion nor a macro nested inside macros
//! can run away. A policy is written by the platform team, not by the
//! tenants whose objects it judges; the objects themselves are bounded by
//! the API server. The interpreter runs under `catch_unwind`: a fault in it
//! refuses the object (fails closed) instead of taking the process down.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock};

use serde_json::Value;

/// The longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// The deepest bracket nesting accepted in an expression.
pub const MAX_EXPRESSION_NESTING: usize = 32;

/// A compiled expression.
pub struct Expression {
    source: String,
    program: cel::Program,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expression").field(&self.source).finish()
    }
}

/// The variables an expression sees.
pub struct Variables<'a> {
    /// The object judged.
    pub object: &'a Value,
    /// The object before the change (null on create).
    pub old_object: &'a Value,
    /// The parsed schema's summary (null when there is none).
    pub schema: &'a Value,
}

impl Expression {
    /// Compiles `source`.
    ///
    /// # Errors
    /// A message saying why it cannot be used.
    pub fn compile(source: &str) -> Result<Self, String> {
        if source.len() > MAX_EXPRESSION_BYTES {
            return Err(format!(
                "the expression is {} bytes long; the limit is {MAX_EXPRESSION_BYTES}",
                source.len()
            ));
        }
        let nesting = bracket_nesting(source);
        if nesting > MAX_EXPRESSION_NESTING {
            return Err(format!(
                "the expression nests brackets {nesting} deep; the limit is {MAX_EXPRESSION_NESTING}"
            ));
        }
        match catch_unwind(|| cel::Program::compile(source)) {
            Ok(Ok(program)) => Ok(Self {
                source: source.to_owned(),
                program,
            }),
            Ok(Err(errors)) => Err(format!("the expression does not parse: {errors}")),
            Err(_) => Err("the expression could not be parsed".to_owned()),
        }
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates the expression: `Ok(true)` when it holds.
    ///
    /// # Errors
    /// A message when it cannot be evaluated or does not give a boolean.
    pub fn holds(&self, bindings: &Bindings) -> Result<bool, String> {
        let run = || match self.program.execute(&bindings.context) {
            Ok(cel::Value::Bool(holds)) => Ok(holds),
            Ok(other) => Err(format!("the expression gives {other:?}, not a boolean")),
            Err(error) => Err(format!("the expression failed: {error}")),
        };
        catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|_| Err("the expression's evaluation failed".to_owned()))
    }
}

/// CEL's standard functions, registered once for the process: building
/// them is most of the cost of a fresh context.
static STANDARD: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(cel::Env::stdlib()));

/// The variables of one judgement, converted for CEL once and shared by
/// every expression of every policy that judges it.
pub struct Bindings {
    context: cel::Context<'static, 'static>,
}

impl Bindings {
    /// Converts `variables`.
    ///
    /// # Errors
    /// A message when a value cannot be given to CEL.
    pub fn new(variables: &Variables<'_>) -> Result<Self, String> {
        let convert = || -> Result<Self, String> {
            let mut context = cel::Context::with_env(Arc::clone(&STANDARD));
            for (name, value) in [
                ("object", variables.object),
                ("oldObject", variables.old_object),
                ("schema", variables.schema),
            ] {
                context
                    .add_variable(name, value)
                    .map_err(|error| format!("`{name}` cannot be given to CEL: {error}"))?;
            }
            Ok(Self { context })
        };
        catch_unwind(AssertUnwindSafe(convert)).unwrap_or_else(|_| Err("the object cannot be given to CEL".to_owned()))
    }
}

/// How deep brackets nest in `source` (outside string literals, roughly: a
/// bracket inside a string only makes the estimate stricter).
fn bracket_nesting(source: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for byte in source.bytes() {
        match byte {
            b'(' | b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(expression: &str, object: Value) -> Result<bool, String> {
        let bindings = Bindings::new(&Variables {
            object: &object,
            old_object: &Value::Null,
            schema: &json!({"namespace": "com.acme"}),
        })?;
        Expression::compile(expression)?.holds(&bindings)
    }

    #[test]
    fn an_expression_sees_the_object_and_the_schema() {
        let object = json!({"metadata": {"name": "orders"}, "spec": {"subject": "team-a.orders"}});
        assert_eq!(
            holds("object.metadata.name.startsWith('ord')", object.clone()),
            Ok(true)
        );
        assert_eq!(
            holds("object.spec.subject.endsWith('-value')", object.clone()),
            Ok(false)
        );
        assert_eq!(holds("schema.namespace == 'com.acme'", object.clone()), Ok(true));
        assert_eq!(holds("oldObject == null", object), Ok(true));
    }

    #[test]
    fn bad_expressions_are_refused_with_the_reason() {
        assert!(Expression::compile("object.").unwrap_err().contains("does not parse"));
        let deep = "(".repeat(40) + "true" + &")".repeat(40);
        assert!(
            Expression::compile(&deep)
                .unwrap_err()
                .contains("nests brackets 40 deep")
        );
        assert!(
            Expression::compile(&"a".repeat(5000))
                .unwrap_err()
                .contains("limit is 4096")
        );
        assert!(holds("1 + 1", json!({})).unwrap_err().contains("not a boolean"));
        assert!(holds("object.missing.field", json!({})).is_err());
    }
}
