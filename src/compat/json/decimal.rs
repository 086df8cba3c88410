//! `multipleOf` factors as the exact decimal numbers a schema writes, not
//! their binary approximations: `1.0000000000000001` is not 1 (an `f64`
//! keeps about 17 significant digits), 0.3 is a multiple of 0.1, and 1e9 is
//! not one of 3.

/// A positive `multipleOf` factor exactly as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Factor {
    /// `mantissa × 10^exponent`, with no trailing zero in `mantissa`, so
    /// each number has exactly one form.
    Decimal { mantissa: u128, exponent: i64 },
    /// A number of more than 38 significant digits (or an exponent out of
    /// range), kept as its digits and exponent in that same one form: equal
    /// to what is written alike, a multiple of nothing and of which nothing
    /// is a multiple, so a change to or from it counts as
    /// `MULTIPLE_OF_CHANGED`, incompatible both ways.
    Long { digits: String, exponent: String },
}

impl Factor {
    /// The factor a JSON number literal spells, or `None` when it is not
    /// greater than zero (or not a JSON number).
    pub(crate) fn parse(literal: &str) -> Option<Factor> {
        if literal.starts_with('-') {
            return None;
        }
        let (number, exponent) = match literal.find(['e', 'E']) {
            Some(at) => (&literal[..at], literal[at + 1..].trim_start_matches('+')),
            None => (literal, "0"),
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() || !format!("{whole}{fraction}").bytes().all(|byte| byte.is_ascii_digit()) {
            return None;
        }
        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        let trimmed = digits.trim_end_matches('0');
        if trimmed.is_empty() {
            return None;
        }
        let shift = (digits.len() - trimmed.len()) as i64 - fraction.len() as i64;
        let decimal = exponent
            .parse::<i64>()
            .ok()
            .and_then(|exponent| exponent.checked_add(shift))
            .zip(trimmed.parse::<u128>().ok());
        Some(match decimal {
            Some((exponent, mantissa)) => Factor::Decimal { mantissa, exponent },
            None => Factor::Long {
                digits: trimmed.to_owned(),
                exponent: format!("{exponent}{shift:+}"),
            },
        })
    }

    /// True when `self / factor` is a whole number.
    ///
    /// The quotient is `(m / n) × 10^k` with `k` the exponents' difference.
    /// Cancel the mantissas' greatest common divisor: what is left of `n`
    /// must divide `10^k`, so `k ≥ 0` and `n = 2^i × 5^j` with `i, j ≤ k`. (A
    /// negative `k` would need 10 to divide `m`, which has no trailing zero.)
    /// This is exact with no big integers, for any exponents.
    pub(crate) fn is_multiple_of(&self, factor: &Factor) -> bool {
        let (
            Factor::Decimal { mantissa, exponent },
            Factor::Decimal {
                mantissa: factor_mantissa,
                exponent: factor_exponent,
            },
        ) = (self, factor)
        else {
            return false;
        };
        let shift = i128::from(*exponent) - i128::from(*factor_exponent);
        let mut rest = factor_mantissa / greatest_common_divisor(*mantissa, *factor_mantissa);
        let mut power = |prime: u128| {
            let mut count = 0_i128;
            while rest.is_multiple_of(prime) {
                rest /= prime;
                count += 1;
            }
            count
        };
        let (twos, fives) = (power(2), power(5));
        shift >= 0 && rest == 1 && twos <= shift && fives <= shift
    }
}

fn greatest_common_divisor(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factor(literal: &str) -> Factor {
        Factor::parse(literal).unwrap()
    }

    #[test]
    fn one_number_has_one_form_however_written() {
        assert_eq!(factor("1.50"), factor("15e-1"));
        assert_eq!(factor("0.001"), factor("1E-3"));
        assert_eq!(
            factor("100"),
            Factor::Decimal {
                mantissa: 1,
                exponent: 2
            }
        );
        assert_ne!(factor("1.0000000000000001"), factor("1"));
        let long = "1.".to_owned() + &"0".repeat(60) + "1";
        assert_eq!(factor(&long), factor(&(long.clone() + "000")));
        assert_ne!(factor(&long), factor("1"));
    }

    #[test]
    fn zero_and_negative_numbers_are_no_factor() {
        for literal in ["0", "0.000", "-1", "-0.5", "0e5"] {
            assert_eq!(Factor::parse(literal), None, "{literal}");
        }
    }

    #[test]
    fn multiples_are_decided_on_the_decimals_written() {
        assert!(factor("0.3").is_multiple_of(&factor("0.1")));
        assert!(factor("3").is_multiple_of(&factor("1")));
        assert!(!factor("3").is_multiple_of(&factor("1.0000000000000001")));
        assert!(factor("3.0000000000000003").is_multiple_of(&factor("1.0000000000000001")));
        assert!(!factor("1e9").is_multiple_of(&factor("3")));
        assert!(factor("1e300").is_multiple_of(&factor("2.5e-300")));
        let long = factor(&("1.".to_owned() + &"0".repeat(60) + "1"));
        assert!(!long.is_multiple_of(&factor("1")) && !factor("1").is_multiple_of(&long));
    }

    /// The factor a number's shortest round-trip text spells.
    fn decimal(value: f64) -> (u128, i64) {
        match Factor::parse(&format!("{value:e}")) {
            Some(Factor::Decimal { mantissa, exponent }) => (mantissa, exponent),
            other => panic!("{value}: {other:?}"),
        }
    }

    fn is_multiple(value: f64, factor: f64) -> bool {
        let written = |number: f64| Factor::parse(&format!("{number:e}")).expect("positive");
        written(value).is_multiple_of(&written(factor))
    }

    #[test]
    fn a_number_becomes_the_decimal_its_json_text_spells() {
        assert_eq!(decimal(3.0), (3, 0));
        assert_eq!(decimal(1e9), (1, 9));
        assert_eq!(decimal(0.1), (1, -1));
        assert_eq!(decimal(0.3), (3, -1));
        assert_eq!(decimal(12.50), (125, -1));
        assert_eq!(decimal(1e-300), (1, -300));
        assert_eq!(decimal(1.5e300), (15, 299));
        assert_eq!(decimal(123_456_789.012_345_6), (1_234_567_890_123_456, -7));
    }

    #[test]
    fn a_multiple_is_decided_in_exact_decimal_arithmetic() {
        // (value, factor, whole multiple?)
        let cases = [
            (4.0, 2.0, true),
            (2.0, 4.0, false),
            (1e9, 3.0, false),
            (999_999_999.0, 3.0, true),
            (0.3, 0.1, true),
            (0.7, 0.1, true),
            (0.1, 0.3, false),
            (1.0, 1.000_000_000_1, false),
            (1.000_000_000_1, 1.0, false),
            (1e300, 1e-300, true),
            (1e-300, 1e300, false),
            (1.0, 0.125, true),
            (1.0, 0.375, false),
            (0.75, 0.375, true),
            (10.0, 2.5, true),
            (2.5, 0.5, true),
            (2.5, 2.0, false),
            (0.01, 0.001, true),
            (0.001, 0.01, false),
            (7.5e-7, 2.5e-7, true),
            (7.0, 7.0, true),
        ];
        for (value, factor, expected) in cases {
            assert_eq!(
                is_multiple(value, factor),
                expected,
                "is {value} a multiple of {factor}?"
            );
        }
    }

    #[test]
    fn the_rule_agrees_with_integer_division_on_scaled_small_decimals() {
        // Every pair of k / 1000 and j / 100 with small numerators, scaled to integers in
        // thousandths, checked with `%`.
        for numerator in 1..=300_u64 {
            for step in 1..=60_u64 {
                let (value, factor) = (numerator as f64 / 1000.0, step as f64 / 100.0);
                let expected = numerator % (step * 10) == 0;
                assert_eq!(
                    is_multiple(value, factor),
                    expected,
                    "is {value} a multiple of {factor}?"
                );
            }
        }
    }
}
