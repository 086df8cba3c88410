//! CEL validations, with the `cel` crate (cel-rust: a maintained,
//! pure-Rust parser and interpreter of the Common Expression Language, the
//! language of Kubernetes' ValidatingAdmissionPolicy).
//!
//! A policy is written by the platform team, not by the tenants whose
//! objects it judges, but one careless or hostile expression must not take
//! the operator down or stall it, so every expression is bounded three ways:
//!
//! - **Size**: at most [`MAX_EXPRESSION_BYTES`], checked before parsing.
//! - **Depth**: the parsed tree (macros expanded) is at most
//!   [`MAX_EXPRESSION_DEPTH`] levels deep, or the policy is invalid. The
//!   parser recurses along `1+1+…` and `a.b.…` chains, so it runs on a stack
//!   of its own ([`PARSE_STACK_BYTES`]) with room for the deepest chain the
//!   size limit lets through; evaluation recurses along the tree, and runs on
//!   a stack with room for the deepest tree allowed ([`EVALUATION_STACK_BYTES`]),
//!   whatever thread judges (a tokio worker has 2 MiB).
//! - **Cost**: one evaluation may take at most [`MAX_EVALUATION_STEPS`] loop
//!   steps and [`MAX_EVALUATION_TIME`]. The crate has no cost tracking, so
//!   the compiled tree is metered: every loop a macro expands to (`all`,
//!   `exists`, `exists_one`, `map`, `filter`) calls a meter once per
//!   iteration, which fails the evaluation once the budget is spent. An
//!   expression over budget is a violation that says so, whatever value it
//!   would have given (fails closed). The steps make the verdict the same on
//!   every machine; the time is the backstop for steps that are each slow
//!   (`x in list` over a long list inside a loop).
//!
//! The same limits hold wherever a policy is compiled or judged (the
//! operator, the webhook, `apply`/`check` and the registry's REST API): all
//! of them go through [`Expression`]. The interpreter runs under
//! `catch_unwind`: a fault in it refuses the object instead of taking the
//! process down.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, operators};
use cel::common::value::CowVal;
use cel::{ExecutionError, IdedExpr};
use serde_json::Value;

/// The longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// The deepest expression accepted: nodes from the root of the parsed tree
/// to its farthest leaf, with macros expanded (`a.b.c` is 3 deep, `1+1+1`
/// is 3, `l.all(x, x > 0)` is 5). Redundant brackets add no depth to the
/// tree, but the parser counts them: more than this many nested brackets,
/// calls or `?:` are refused too.
pub const MAX_EXPRESSION_DEPTH: usize = 64;

/// The most loop steps (iterations of a macro's loop, nested loops
/// included) one evaluation of one expression may take.
pub const MAX_EVALUATION_STEPS: u64 = 100_000;

/// The longest one evaluation of one expression may run.
pub const MAX_EVALUATION_TIME: Duration = Duration::from_millis(250);

/// The stack parsing runs on. A 4 KiB chain `a.b.…` (2,047 levels) needs
/// about 4 MiB in a debug build (measured), less in a release build; the
/// stack is reserved, and only touched as deep as the parser goes.
const PARSE_STACK_BYTES: usize = 16 << 20;

/// The stack an evaluation needs: room for a tree of [`MAX_EXPRESSION_DEPTH`]
/// levels (its meters included) and for the standard functions it calls.
/// The deepest trees tried needed 2–3 MiB in a debug build (measured), far
/// less in a release build. Evaluation runs on the current stack when that
/// much is left, else on a new one (see [`on_evaluation_stack`]).
const EVALUATION_STACK_BYTES: usize = 8 << 20;

/// Runs `work`, which evaluates expressions, where [`EVALUATION_STACK_BYTES`]
/// are left: on the current stack, else on a new one with room to spare, so
/// that the evaluations `work` makes run there without a stack of their own
/// each (a new stack costs an `mmap`).
pub(super) fn on_evaluation_stack<R>(work: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(EVALUATION_STACK_BYTES, EVALUATION_STACK_BYTES + (1 << 20), work)
}

/// The function each loop step calls (see [`meter_loops`]). A name that
/// starts with `@` cannot be written in CEL, so an expression cannot call it.
const METER: &str = "@step";

/// A compiled expression: its tree, with a meter on every loop.
pub struct Expression {
    source: String,
    tree: IdedExpr,
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
        // A tree refused for its depth is dropped (recursively) in here too.
        stacker::grow(PARSE_STACK_BYTES, || {
            catch_unwind(|| parse(source)).unwrap_or_else(|_| Err("the expression could not be parsed".to_owned()))
        })
        .map(|tree| Self {
            source: source.to_owned(),
            tree,
        })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates the expression: `Ok(true)` when it holds.
    ///
    /// # Errors
    /// A message when it cannot be evaluated, does not give a boolean, or
    /// runs out of its budget.
    pub fn holds(&self, bindings: &Bindings) -> Result<bool, String> {
        let run = || {
            let budget = Budget::start();
            let outcome = cel::Value::resolve(&self.tree, &bindings.context);
            if budget.spent() {
                return Err(format!(
                    "the rule ran out of its evaluation budget ({MAX_EVALUATION_STEPS} steps / {} ms)",
                    MAX_EVALUATION_TIME.as_millis()
                ));
            }
            match outcome {
                Ok(cel::Value::Bool(holds)) => Ok(holds),
                Ok(other) => Err(format!("the expression gives {other:?}, not a boolean")),
                Err(error) => Err(format!("the expression failed: {error}")),
            }
        };
        on_evaluation_stack(|| {
            catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|_| Err("the expression's evaluation failed".to_owned()))
        })
    }
}

/// Parses `source` into a tree of at most [`MAX_EXPRESSION_DEPTH`] levels,
/// with its loops metered.
fn parse(source: &str) -> Result<IdedExpr, String> {
    let parser = cel::parser::Parser::new().max_recursion_depth(MAX_EXPRESSION_DEPTH as u16);
    let mut tree = parser.parse(source).map_err(|errors| {
        let errors = errors.to_string();
        if errors.contains("Recursion limit") {
            format!(
                "the expression nests brackets, calls or `?:` more than {MAX_EXPRESSION_DEPTH} deep; \
                 the limit is {MAX_EXPRESSION_DEPTH}"
            )
        } else {
            format!("the expression does not parse: {errors}")
        }
    })?;
    let depth = depth(&mut tree);
    if depth > MAX_EXPRESSION_DEPTH {
        return Err(format!(
            "the expression is {depth} levels deep; the limit is {MAX_EXPRESSION_DEPTH}"
        ));
    }
    meter_loops(&mut tree);
    Ok(tree)
}

/// The subexpressions of `node`.
fn children(node: &mut IdedExpr) -> Vec<&mut IdedExpr> {
    match &mut node.expr {
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => Vec::new(),
        Expr::Call(call) => call.target.as_deref_mut().into_iter().chain(&mut call.args).collect(),
        Expr::Comprehension(comprehension) => {
            let ComprehensionExpr {
                iter_range,
                accu_init,
                loop_cond,
                loop_step,
                result,
                ..
            } = &mut **comprehension;
            vec![iter_range, accu_init, loop_cond, loop_step, result]
        }
        Expr::List(list) => list.elements.iter_mut().collect(),
        Expr::Select(select) => vec![&mut *select.operand],
        Expr::Map(map) => map
            .entries
            .iter_mut()
            .flat_map(|entry| entry_children(&mut entry.expr))
            .collect(),
        Expr::Struct(structure) => structure
            .entries
            .iter_mut()
            .flat_map(|entry| entry_children(&mut entry.expr))
            .collect(),
    }
}

fn entry_children(entry: &mut EntryExpr) -> Vec<&mut IdedExpr> {
    match entry {
        EntryExpr::MapEntry(entry) => vec![&mut entry.key, &mut entry.value],
        EntryExpr::StructField(field) => vec![&mut field.value],
    }
}

/// The depth of `tree`, found without recursion (a 4 KiB expression can be
/// thousands of levels deep).
fn depth(tree: &mut IdedExpr) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(tree, 1)];
    while let Some((node, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        pending.extend(children(node).into_iter().map(|child| (child, depth + 1)));
    }
    deepest
}

/// Puts a call of [`METER`] on every loop of `tree`, on a part of the loop
/// that runs once per iteration, before the rest of the iteration where it
/// can: the loop's condition, which ends the loop at once when it fails.
/// `map` and `filter` keep a constant condition (the interpreter recognises
/// their shape and builds their lists in place); their meter goes on the
/// filter's test, or on the element `map` appends.
fn meter_loops(tree: &mut IdedExpr) {
    for child in children(tree) {
        meter_loops(child);
    }
    if let Expr::Comprehension(comprehension) = &mut tree.expr {
        let ComprehensionExpr {
            loop_cond, loop_step, ..
        } = &mut **comprehension;
        let metered = if matches!(loop_cond.expr, Expr::Literal(_)) {
            once_per_iteration(loop_step).unwrap_or(loop_cond)
        } else {
            loop_cond
        };
        let inner = std::mem::take(metered);
        *metered = IdedExpr {
            id: inner.id,
            expr: Expr::Call(CallExpr {
                func_name: METER.to_owned(),
                target: None,
                args: vec![inner],
            }),
        };
    }
}

/// In a loop step `test ? … : …` or `accumulator + [element]`, the test or
/// the element.
fn once_per_iteration(step: &mut IdedExpr) -> Option<&mut IdedExpr> {
    let Expr::Call(call) = &mut step.expr else {
        return None;
    };
    if call.target.is_some() {
        return None;
    }
    match (call.func_name.as_str(), call.args.as_mut_slice()) {
        (operators::CONDITIONAL, [test, _, _]) => Some(test),
        (operators::ADD, [_, appended]) => match &mut appended.expr {
            Expr::List(list) => list.elements.first_mut(),
            _ => None,
        },
        _ => None,
    }
}

/// What is left of the budget of the evaluation running on this thread.
#[derive(Clone, Copy)]
struct Remaining {
    steps: u64,
    deadline: Instant,
    spent: bool,
}

thread_local! {
    static REMAINING: Cell<Option<Remaining>> = const { Cell::new(None) };
}

/// The budget of one evaluation, for as long as it lives (evaluation is
/// synchronous: it cannot move to another thread meanwhile).
struct Budget;

impl Budget {
    fn start() -> Self {
        REMAINING.set(Some(Remaining {
            steps: MAX_EVALUATION_STEPS,
            deadline: Instant::now() + MAX_EVALUATION_TIME,
            spent: false,
        }));
        Self
    }

    fn spent(&self) -> bool {
        REMAINING.get().is_none_or(|remaining| remaining.spent)
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        REMAINING.set(None);
    }
}

/// How many steps go between two looks at the clock.
const STEPS_PER_CLOCK_READING: u64 = 64;

/// [`METER`]: takes one step of the running evaluation's budget and gives
/// its argument back, or fails once the budget is spent (and every time
/// after, so that nested loops end at once). Without a budget (no
/// evaluation under [`Expression::holds`]) it fails too.
fn take_step<'b, 'v>(arguments: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let spent = || ExecutionError::function_error(METER, "the evaluation budget is spent");
    let Some(mut remaining) = REMAINING.get() else {
        return Err(spent());
    };
    let out_of_time = || remaining.steps % STEPS_PER_CLOCK_READING == 0 && Instant::now() >= remaining.deadline;
    if remaining.spent || remaining.steps == 0 || out_of_time() {
        remaining.spent = true;
        REMAINING.set(Some(remaining));
        return Err(spent());
    }
    remaining.steps -= 1;
    REMAINING.set(Some(remaining));
    arguments.into_iter().next().ok_or_else(spent)
}

/// CEL's standard functions and the loop meter, registered once for the
/// process: building them is most of the cost of a fresh context.
static STANDARD: LazyLock<Arc<cel::Env>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib();
    env.add_overload(METER, "@step(dyn)", vec![cel::common::types::DYN_TYPE], take_step)
        .expect("the meter's name is free");
    Arc::new(env)
});

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
        // The conversion recurses as deep as the values nest.
        on_evaluation_stack(|| {
            catch_unwind(AssertUnwindSafe(convert))
                .unwrap_or_else(|_| Err("the object cannot be given to CEL".to_owned()))
        })
    }
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
        let deep = "(".repeat(70) + "true" + &")".repeat(70);
        assert!(
            Expression::compile(&deep)
                .unwrap_err()
                .contains("more than 64 deep; the limit is 64")
        );
        assert!(
            Expression::compile(&"a".repeat(5000))
                .unwrap_err()
                .contains("limit is 4096")
        );
        assert!(holds("1 + 1", json!({})).unwrap_err().contains("not a boolean"));
        assert!(holds("object.missing.field", json!({})).is_err());
    }

    /// Runs `work` on a thread with a tokio worker's stack (2 MiB), as the
    /// operator and the webhook judge.
    fn on_a_small_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(work)
            .expect("a thread")
            .join()
            .expect("no panic")
    }

    /// Chains as long as 4 KiB allows, without brackets to count: each
    /// parses into a tree thousands of levels deep.
    fn hostile_chains() -> Vec<String> {
        let chain = |term: &str, operator: &str, end: &str| {
            let terms = (MAX_EXPRESSION_BYTES - end.len() + operator.len()) / (term.len() + operator.len());
            vec![term; terms].join(operator) + end
        };
        vec![
            chain("1", "+", " > 0"),
            chain("1", "-", " > 0"),
            chain("1", "*", " > 0"),
            chain("[1]", "+", " == []"),
            "a".to_owned() + &"[0]".repeat(1360),
            "a".to_owned() + &".b".repeat(2040),
            "a".to_owned() + &".f()".repeat(1020),
            chain("1", "<", ""),
        ]
    }

    #[test]
    fn a_chain_thousands_deep_is_refused_on_a_small_stack_without_aborting() {
        assert_eq!(vec!["1"; 2046].join("+").len() + 4, 4095);
        for source in hostile_chains() {
            assert!(source.len() <= MAX_EXPRESSION_BYTES, "{}", source.len());
            let head = source[..12].to_owned();
            let refusal = on_a_small_stack(move || Expression::compile(&source).map(drop)).expect_err(&head);
            assert!(refusal.contains("levels deep; the limit is 64"), "{head}…: {refusal}");
        }
    }

    #[test]
    fn the_deepest_expression_allowed_is_judged_on_a_small_stack() {
        // `1+1+…+1 > 0` with n terms is n + 1 levels deep.
        let sum = |terms: usize| vec!["1"; terms].join("+") + " > 0";
        let refusal = Expression::compile(&sum(MAX_EXPRESSION_DEPTH)).unwrap_err();
        assert!(refusal.contains("is 65 levels deep; the limit is 64"), "{refusal}");
        // Loops nested as deep as allowed: each `[0].all(x, …)` is 3 levels.
        let mut nested = "x0 == 0".to_owned();
        for level in 1..=20 {
            nested = format!("[0].all(x{level}, {nested})");
        }
        for source in [sum(MAX_EXPRESSION_DEPTH - 1), nested, "a".to_owned() + &".b".repeat(63)] {
            let outcome = on_a_small_stack(move || {
                let bindings = Bindings::new(&Variables {
                    object: &json!({}),
                    old_object: &Value::Null,
                    schema: &Value::Null,
                })?;
                Expression::compile(&source)?.holds(&bindings)
            });
            assert!(!matches!(&outcome, Err(error) if error.contains("deep")), "{outcome:?}");
        }
    }

    #[test]
    fn every_macro_still_gives_its_value_with_the_meter_on() {
        for expression in [
            "[1, 2, 3].map(x, x * 2) == [2, 4, 6]",
            "[1, 2, 3].map(x, x > 1, x * 2) == [4, 6]",
            "[1, 2, 3].filter(x, x > 1) == [2, 3]",
            "[1, 2, 3].all(x, x > 0)",
            "!([1, 2, 3].all(x, x < 3))",
            "[1, 2, 3].exists(x, x == 3)",
            "![1, 2, 3].exists(x, x == 4)",
            "[1, 2, 3].exists_one(x, x == 2)",
            "!([1, 2, 2].exists_one(x, x == 2))",
            "{'a': 1, 'b': 2}.all(k, k.size() == 1)",
            "has(object.a) && object.a.all(x, x.size() > 0)",
        ] {
            assert_eq!(holds(expression, json!({"a": ["x", "y"]})), Ok(true), "{expression}");
        }
    }

    /// `schema.fields` of `count` fields named f0, f1, …
    fn fields(count: usize) -> Value {
        json!({"fields": (0..count).map(|i| json!({"name": format!("f{i}")})).collect::<Vec<_>>()})
    }

    fn judge(expression: &str, schema: &Value) -> Result<bool, String> {
        let bindings = Bindings::new(&Variables {
            object: &json!({}),
            old_object: &Value::Null,
            schema,
        })?;
        Expression::compile(expression)?.holds(&bindings)
    }

    const UNIQUE_NAMES: &str = "schema.fields.all(f, schema.fields.filter(g, g.name == f.name).size() == 1)";

    #[test]
    fn a_rule_over_its_budget_is_a_violation_that_says_so() {
        let over = |outcome: Result<bool, String>| {
            let error = outcome.expect_err("over budget is never a pass");
            assert!(
                error.contains("ran out of its evaluation budget (100000 steps / 250 ms)"),
                "{error}"
            );
        };
        // 10^7 steps.
        let ten = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]";
        let nested = (1..=7).fold("true".to_owned(), |inner, level| {
            format!("{ten}.all(x{level}, {inner})")
        });
        over(judge(&nested, &Value::Null));
        // n² steps: fine at 20 fields, over budget at 2,000.
        assert_eq!(judge(UNIQUE_NAMES, &fields(20)), Ok(true));
        over(judge(UNIQUE_NAMES, &fields(2_000)));
        // The same through `map` and `exists_one`, and hidden behind `|| true`
        // (CEL lets a true `||` absorb an error; the budget does not).
        over(judge(
            "schema.fields.all(f, schema.fields.map(g, g.name).exists_one(n, n == f.name))",
            &fields(2_000),
        ));
        over(judge(&format!("{UNIQUE_NAMES} || true"), &fields(2_000)));
        // The budget is one evaluation's: the next starts afresh.
        assert_eq!(judge(UNIQUE_NAMES, &fields(20)), Ok(true));
    }

    #[test]
    fn the_meter_cannot_be_called_from_an_expression() {
        assert!(Expression::compile("@step(true)").is_err());
    }
}
