//! Kubernetes label selectors (`matchLabels`, `matchExpressions` with In,
//! NotIn, Exists, DoesNotExist), checked once when a policy is compiled and
//! matched against a namespace's labels. Plain data, no client.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// One requirement on a label.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A compiled label selector; every requirement must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    /// Compiles `selector`.
    ///
    /// # Errors
    /// A message naming the expression whose operator or values are wrong.
    pub fn new(selector: &LabelSelector) -> Result<Self, String> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(key, value)| Requirement::In(key.clone(), vec![value.clone()]))
            .collect();
        for (index, expression) in selector.match_expressions.iter().flatten().enumerate() {
            let key = expression.key.clone();
            let values = expression.values.clone().unwrap_or_default();
            let with_values = |make: fn(String, Vec<String>) -> Requirement| {
                if values.is_empty() {
                    Err(format!(
                        "matchExpressions[{index}]: {} needs values",
                        expression.operator
                    ))
                } else {
                    Ok(make(key.clone(), values.clone()))
                }
            };
            let without_values = |requirement: Requirement| {
                if values.is_empty() {
                    Ok(requirement)
                } else {
                    Err(format!(
                        "matchExpressions[{index}]: {} takes no values",
                        expression.operator
                    ))
                }
            };
            requirements.push(match expression.operator.as_str() {
                "In" => with_values(Requirement::In)?,
                "NotIn" => with_values(Requirement::NotIn)?,
                "Exists" => without_values(Requirement::Exists(key.clone()))?,
                "DoesNotExist" => without_values(Requirement::DoesNotExist(key.clone()))?,
                other => {
                    return Err(format!(
                        "matchExpressions[{index}]: unknown operator `{other}` (In, NotIn, Exists, DoesNotExist)"
                    ));
                }
            });
        }
        Ok(Self(requirements))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|requirement| match requirement {
            Requirement::In(key, values) => labels.get(key).is_some_and(|value| values.contains(value)),
            Requirement::NotIn(key, values) => labels.get(key).is_none_or(|value| !values.contains(value)),
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::DoesNotExist(key) => !labels.contains_key(key),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(value: serde_json::Value) -> Result<Selector, String> {
        Selector::new(&serde_json::from_value(value).unwrap())
    }

    #[test]
    fn every_operator_matches_as_kubernetes_defines_it() {
        let labels = BTreeMap::from([
            ("env".to_owned(), "prod".to_owned()),
            ("tier".to_owned(), "gold".to_owned()),
        ]);
        let holds = |value| selector(value).unwrap().matches(&labels);
        assert!(holds(serde_json::json!({})));
        assert!(holds(serde_json::json!({"matchLabels": {"env": "prod"}})));
        assert!(!holds(serde_json::json!({"matchLabels": {"env": "dev"}})));
        assert!(holds(
            serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]})
        ));
        assert!(!holds(
            serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]})
        ));
        assert!(holds(
            serde_json::json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]})
        ));
        assert!(holds(
            serde_json::json!({"matchExpressions": [{"key": "env", "operator": "Exists"}]})
        ));
        assert!(holds(
            serde_json::json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})
        ));
    }

    #[test]
    fn a_malformed_expression_is_refused_with_its_index() {
        let error = selector(serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In"}]})).unwrap_err();
        assert_eq!(error, "matchExpressions[0]: In needs values");
        let error =
            selector(serde_json::json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}))
                .unwrap_err();
        assert_eq!(error, "matchExpressions[0]: Exists takes no values");
    }
}
