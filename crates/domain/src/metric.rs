//! MetricDefinition / MetricValue (docs/operations.md): what may be measured, and the rules of
//! a measurement.
//!
//! - **MET-1** Values are append-only; the definition and the measured entity (of the
//!   definition's scope, visible to the writer) must exist when a value is written; the value's
//!   type matches `dataType`; names are unique within a scope. A deleted entity's values stay,
//!   as history.
//! - **MET-2** A definition with values is deleted only with `?cascade=true`.
//! - **MET-3** The aggregation suits the data type (no sum or average of timestamps);
//!   `retentionDays` lies in 1..3650; `scope` and `dataType` never change.
//! - **MET-4** (audit) No value outlives its definition's `retentionDays` by more than a day
//!   (the retention sweep removes them).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, Id};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Service,
    Tool,
    Process,
    Conversation,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Service => "service",
            Scope::Tool => "tool",
            Scope::Process => "process",
            Scope::Conversation => "conversation",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [Self::Service, Self::Tool, Self::Process, Self::Conversation]
            .into_iter()
            .find(|s| s.as_str() == raw)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    Sum,
    Avg,
    Min,
    Max,
    Count,
    Last,
}

impl Aggregation {
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregation::Sum => "sum",
            Aggregation::Avg => "avg",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
            Aggregation::Count => "count",
            Aggregation::Last => "last",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        use Aggregation::*;
        [Sum, Avg, Min, Max, Count, Last]
            .into_iter()
            .find(|a| a.as_str() == raw)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    Integer,
    Float,
    Boolean,
    /// RFC 3339; stored as epoch milliseconds.
    Timestamp,
}

impl DataType {
    pub fn as_str(self) -> &'static str {
        match self {
            DataType::Integer => "integer",
            DataType::Float => "float",
            DataType::Boolean => "boolean",
            DataType::Timestamp => "timestamp",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        use DataType::*;
        [Integer, Float, Boolean, Timestamp]
            .into_iter()
            .find(|d| d.as_str() == raw)
    }
}

/// A metric definition as stored and as shown: the graph reads it into this type directly (an
/// unknown scope, aggregation or dataType in the graph is a decode error, not a value).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricDefinition {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub scope: Scope,
    pub aggregation: Aggregation,
    pub data_type: DataType,
    pub retention_days: Option<i64>,
    pub revision: i64,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// `POST /v1/metric-definitions`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMetricDefinition {
    pub id: Option<Id>,
    #[schemars(schema_with = "crate::wire::name")]
    pub name: String,
    pub description: Option<String>,
    pub scope: Scope,
    pub aggregation: Aggregation,
    pub data_type: DataType,
    /// Values older than this many days are removed (MET-4); none: kept.
    pub retention_days: Option<i64>,
}

/// `PATCH /v1/metric-definitions/{id}`: `scope` and `dataType` are accepted only unchanged
/// (MET-3), so a client may send back what it read.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricDefinitionPatch {
    #[serde(default)]
    #[schemars(schema_with = "crate::wire::name_or_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub description: Option<Option<String>>,
    pub aggregation: Option<Aggregation>,
    #[serde(default, deserialize_with = "crate::nullable::deserialize")]
    pub retention_days: Option<Option<i64>>,
    pub scope: Option<Scope>,
    pub data_type: Option<DataType>,
}

/// MET-3: the aggregation suits the data type and the retention is in range.
pub fn check_definition(
    aggregation: Aggregation,
    data_type: DataType,
    retention_days: Option<i64>,
) -> Result<(), Error> {
    if data_type == DataType::Timestamp
        && matches!(aggregation, Aggregation::Sum | Aggregation::Avg)
    {
        return Err(Error::invariant(
            "MET-3",
            "/aggregation",
            "timestamps are aggregated by min, max, count or last",
        ));
    }
    if let Some(days) = retention_days {
        if !(1..=3650).contains(&days) {
            return Err(Error::invariant(
                "MET-3",
                "/retentionDays",
                "must be 1..3650 days (or null: kept)",
            ));
        }
    }
    Ok(())
}

/// MET-3: `scope` and `dataType` never change.
pub fn check_immutable(
    patch: &MetricDefinitionPatch,
    scope: Scope,
    data_type: DataType,
) -> Result<(), Error> {
    if patch.scope.is_some_and(|s| s != scope) {
        return Err(Error::invariant("MET-3", "/scope", "scope never changes"));
    }
    if patch.data_type.is_some_and(|d| d != data_type) {
        return Err(Error::invariant(
            "MET-3",
            "/dataType",
            "dataType never changes",
        ));
    }
    Ok(())
}

/// A measurement as stored: the number aggregations use (booleans 0/1, timestamps epoch ms)
/// and the JSON the client sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub number: f64,
    pub shown: Value,
}

/// MET-1: the value's type matches `dataType`.
pub fn typed_value(data_type: DataType, value: &Value) -> Result<Measured, Error> {
    let wrong = || {
        Error::invariant(
            "MET-1",
            "/value",
            format!("the metric's dataType is {}", data_type.as_str()),
        )
    };
    let number = match data_type {
        DataType::Integer => value
            .as_i64()
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            })
            .ok_or_else(wrong)? as f64,
        DataType::Float => value.as_f64().filter(|f| f.is_finite()).ok_or_else(wrong)?,
        DataType::Boolean => {
            if value.as_bool().ok_or_else(wrong)? {
                1.0
            } else {
                0.0
            }
        }
        DataType::Timestamp => {
            epoch_ms(value.as_str().ok_or_else(wrong)?).ok_or_else(wrong)? as f64
        }
    };
    Ok(Measured {
        number,
        shown: value.clone(),
    })
}

/// RFC 3339 → epoch milliseconds.
pub fn epoch_ms(raw: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Dimensions: a flat object of strings, numbers and booleans (at most 16), for grouping.
pub fn check_dimensions(dimensions: &Value) -> Result<(), Error> {
    let bad = |m: &str| Error::validation("/dimensions", m.to_owned());
    let map = dimensions
        .as_object()
        .ok_or_else(|| bad("must be an object"))?;
    if map.len() > 16 {
        return Err(bad("at most 16 dimensions"));
    }
    if map
        .values()
        .any(|v| !(v.is_string() || v.is_number() || v.is_boolean()))
    {
        return Err(bad("values are strings, numbers or booleans"));
    }
    Ok(())
}

/// One stored measurement, as aggregation sees it.
#[derive(Debug, Clone)]
pub struct Point {
    pub at_ms: i64,
    pub number: f64,
}

/// The definition's aggregation over `points` (none: null; `count` of none: 0). Timestamps
/// come back as RFC 3339, integers as integers where the result is whole.
pub fn aggregate(aggregation: Aggregation, data_type: DataType, points: &[Point]) -> Value {
    if aggregation == Aggregation::Count {
        return Value::from(points.len());
    }
    if points.is_empty() {
        return Value::Null;
    }
    let numbers = points.iter().map(|p| p.number);
    let result = match aggregation {
        Aggregation::Sum => numbers.sum(),
        Aggregation::Avg => numbers.sum::<f64>() / points.len() as f64,
        Aggregation::Min => numbers.fold(f64::INFINITY, f64::min),
        Aggregation::Max => numbers.fold(f64::NEG_INFINITY, f64::max),
        Aggregation::Last => points
            .iter()
            .max_by_key(|p| p.at_ms)
            .map_or(0.0, |p| p.number),
        Aggregation::Count => unreachable!("answered above"),
    };
    shown(aggregation, data_type, result)
}

fn shown(aggregation: Aggregation, data_type: DataType, n: f64) -> Value {
    match data_type {
        DataType::Timestamp => chrono::DateTime::from_timestamp_millis(n as i64)
            .map_or(Value::Null, |t| Value::from(t.to_rfc3339())),
        DataType::Boolean
            if aggregation == Aggregation::Last
                || aggregation == Aggregation::Min
                || aggregation == Aggregation::Max =>
        {
            Value::from(n != 0.0)
        }
        DataType::Integer if aggregation != Aggregation::Avg && n.fract() == 0.0 => {
            Value::from(n as i64)
        }
        _ => Value::from(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(r: Result<impl Sized, Error>) -> Option<&'static str> {
        r.err()
            .and_then(|e| e.details().first().and_then(|v| v.invariant))
    }

    #[test]
    fn met_1_values_match_the_data_type() {
        assert_eq!(
            typed_value(DataType::Integer, &json!(3)).unwrap().number,
            3.0
        );
        assert_eq!(
            typed_value(DataType::Integer, &json!(3.0)).unwrap().number,
            3.0
        );
        assert_eq!(
            rule(typed_value(DataType::Integer, &json!(3.5))),
            Some("MET-1")
        );
        assert_eq!(
            rule(typed_value(DataType::Integer, &json!("3"))),
            Some("MET-1")
        );
        assert_eq!(
            typed_value(DataType::Float, &json!(2.5)).unwrap().number,
            2.5
        );
        assert_eq!(
            rule(typed_value(DataType::Float, &json!(true))),
            Some("MET-1")
        );
        assert_eq!(
            typed_value(DataType::Boolean, &json!(true)).unwrap().number,
            1.0
        );
        assert_eq!(
            rule(typed_value(DataType::Boolean, &json!(1))),
            Some("MET-1")
        );
        assert_eq!(
            typed_value(DataType::Timestamp, &json!("1970-01-01T00:00:01Z"))
                .unwrap()
                .number,
            1000.0
        );
        assert_eq!(
            rule(typed_value(DataType::Timestamp, &json!("yesterday"))),
            Some("MET-1")
        );
    }

    #[test]
    fn met_3_aggregation_fits_the_type_and_retention_is_in_range() {
        assert!(check_definition(Aggregation::Avg, DataType::Float, Some(30)).is_ok());
        assert_eq!(
            rule(check_definition(
                Aggregation::Sum,
                DataType::Timestamp,
                None
            )),
            Some("MET-3")
        );
        assert!(check_definition(Aggregation::Max, DataType::Timestamp, None).is_ok());
        for days in [0, 3651, -1] {
            assert_eq!(
                rule(check_definition(
                    Aggregation::Sum,
                    DataType::Integer,
                    Some(days)
                )),
                Some("MET-3")
            );
        }
        let patch = MetricDefinitionPatch {
            scope: Some(Scope::Tool),
            ..Default::default()
        };
        assert!(check_immutable(&patch, Scope::Tool, DataType::Float).is_ok());
        assert_eq!(
            rule(check_immutable(&patch, Scope::Process, DataType::Float)),
            Some("MET-3")
        );
    }

    #[test]
    fn aggregations_over_points() {
        let pts = |v: &[(i64, f64)]| {
            v.iter()
                .map(|&(at_ms, number)| Point { at_ms, number })
                .collect::<Vec<_>>()
        };
        let p = pts(&[(3, 5.0), (1, 1.0), (2, 3.0)]);
        use Aggregation::*;
        let i = DataType::Integer;
        assert_eq!(aggregate(Sum, i, &p), json!(9));
        assert_eq!(aggregate(Avg, i, &p), json!(3.0));
        assert_eq!(aggregate(Min, i, &p), json!(1));
        assert_eq!(aggregate(Max, i, &p), json!(5));
        assert_eq!(aggregate(Count, i, &p), json!(3));
        assert_eq!(aggregate(Last, i, &p), json!(5), "the latest timestamp");
        assert_eq!(aggregate(Sum, i, &[]), Value::Null);
        assert_eq!(aggregate(Count, i, &[]), json!(0));
        assert_eq!(
            aggregate(Avg, DataType::Boolean, &pts(&[(1, 1.0), (2, 0.0)])),
            json!(0.5),
            "the share of true"
        );
        assert_eq!(
            aggregate(Max, DataType::Timestamp, &pts(&[(1, 1000.0)])),
            json!("1970-01-01T00:00:01+00:00")
        );
    }

    #[test]
    fn dimensions_are_flat_and_few() {
        assert!(check_dimensions(&json!({"userId": "u", "n": 1, "ok": true})).is_ok());
        assert!(check_dimensions(&json!({"nested": {"a": 1}})).is_err());
        assert!(check_dimensions(&json!([1])).is_err());
    }
}
