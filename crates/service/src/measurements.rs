//! MetricDefinition / MetricValue: admin-defined metrics, append-only values that
//! clients write for entities they can see, aggregation over a time range, and the retention
//! sweep. Rules MET-1..4 live in `aiden_domain::metric`.

use aiden_domain::{
    access::ensure_admin,
    metric::{
        aggregate, check_definition, check_dimensions, check_immutable, epoch_ms, typed_value,
        Aggregation, MetricDefinitionPatch, NewMetricDefinition, Point,
    },
    user::Caller,
    Error as Rule, Id,
};
use aiden_graph::measurements::{self as store, DefinitionState, ValueRow};

/// A metric definition as shown: the domain's, which the graph reads directly.
pub use aiden_domain::metric::MetricDefinition;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    now,
    tx::{read_tx, write_tx},
    App, Page, PageRequest, Result,
};

/// An RFC 3339 time, as the schema states it (the server refuses any other text).
fn date_time(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "null"], "format": "date-time"})
}

/// Dimensions as the server checks them: at most 16, each a string, number or boolean.
fn dimensions(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["object", "null"], "maxProperties": 16,
        "additionalProperties": {"type": ["string", "number", "boolean"]}})
}

/// `POST /v1/metric-values`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMetricValue {
    pub metric_id: String,
    /// The measured Service, Tool, Process or Conversation (the definition's scope).
    pub entity_id: String,
    /// Typed per the definition's `dataType` (MET-1).
    pub value: Value,
    /// When it was measured (RFC 3339); default now.
    #[serde(default)]
    #[schemars(schema_with = "date_time")]
    pub timestamp: Option<String>,
    /// Flat `{key: string|number|boolean}` for filtering and grouping.
    #[serde(default)]
    #[schemars(schema_with = "dimensions")]
    pub dimensions: Option<Value>,
}

/// A value as shown.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricValue {
    pub id: String,
    pub metric_id: String,
    pub entity_id: String,
    pub value: Value,
    pub timestamp: String,
    pub dimensions: Option<Value>,
    pub created_at: Option<String>,
}

impl From<ValueRow> for MetricValue {
    fn from(r: ValueRow) -> Self {
        Self {
            value: serde_json::from_str(&r.value).unwrap_or(Value::Null),
            dimensions: r.dimensions.and_then(|d| serde_json::from_str(&d).ok()),
            id: r.id,
            metric_id: r.metric_id,
            entity_id: r.entity_id,
            timestamp: r.timestamp,
            created_at: r.created_at,
        }
    }
}

/// `GET /v1/metric-values` and `…/aggregate`: `?metricId=&entityId=&from=&to=&groupBy=`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricValueQuery {
    pub metric_id: String,
    pub entity_id: Option<String>,
    /// RFC 3339, inclusive; default: the beginning.
    #[serde(default)]
    #[schemars(schema_with = "date_time")]
    pub from: Option<String>,
    /// RFC 3339, exclusive; default: no end.
    #[serde(default)]
    #[schemars(schema_with = "date_time")]
    pub to: Option<String>,
    /// `entityId` or a dimension's key (aggregate only).
    pub group_by: Option<String>,
}

/// `GET /v1/metric-values/aggregate`: `{value}`, or `{groups}` with `groupBy`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Aggregate {
    pub aggregation: Aggregation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<Group>>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Group {
    /// The dimension's value as text (null: values without it).
    pub key: Option<String>,
    pub value: Value,
}

/// The most values one aggregate reads; a wider range is refused (narrow it or group less).
const MAX_AGGREGATED: i64 = 100_000;

fn range_ms(raw: Option<&str>, path: &str, default: i64) -> Result<i64> {
    match raw {
        None => Ok(default),
        Some(s) => {
            epoch_ms(s).ok_or_else(|| Rule::validation(path, "must be an RFC 3339 time").into())
        }
    }
}

impl App {
    pub async fn create_metric_definition(
        &self,
        caller: &Caller,
        input: NewMetricDefinition,
    ) -> Result<MetricDefinition> {
        ensure_admin(caller)?;
        aiden_domain::service::check_name(&input.name)?;
        check_definition(input.aggregation, input.data_type, input.retention_days)?;
        let id = aiden_domain::ids::id_or_new(input.id);
        let at = now();
        let state = DefinitionState {
            id: id.as_str(),
            name: &input.name,
            description: input.description.as_deref(),
            scope: input.scope.as_str(),
            aggregation: input.aggregation.as_str(),
            data_type: input.data_type.as_str(),
            retention_days: input.retention_days,
            by: caller.id.as_str(),
            now: &at,
        };
        write_tx!(self, |tx| {
            if store::get_definition(&mut tx, state.id).await?.is_some() {
                return Err(Rule::conflict(format!("metric '{}' already exists", state.id)).into());
            }
            ensure_name_free(&mut tx, &state).await?;
            store::create_definition(&mut tx, &state).await?;
            Ok(())
        })?;
        self.metric_definition_row(id.as_str()).await
    }

    /// Any caller may read one definition (to write values of the right type).
    pub async fn metric_definition(&self, _caller: &Caller, id: &str) -> Result<MetricDefinition> {
        self.metric_definition_row(id).await
    }

    async fn metric_definition_row(&self, id: &str) -> Result<MetricDefinition> {
        let row = read_tx!(self, |tx| { Ok(store::get_definition(&mut tx, id).await?) })?;
        Ok(row.ok_or(Rule::NotFound)?)
    }

    pub async fn metric_definitions(
        &self,
        caller: &Caller,
        page: PageRequest,
    ) -> Result<Page<MetricDefinition>> {
        ensure_admin(caller)?;
        let limit = page.limit()?;
        let after = page.cursor.clone().unwrap_or_default();
        let rows = read_tx!(self, |tx| {
            Ok(store::list_definitions(&mut tx, &after, limit + 1).await?)
        })?;
        Ok(Page::from_one_more(rows, limit, |d| d.id.clone()))
    }

    pub async fn update_metric_definition(
        &self,
        caller: &Caller,
        id: &str,
        patch: MetricDefinitionPatch,
    ) -> Result<MetricDefinition> {
        ensure_admin(caller)?;
        if let Some(name) = &patch.name {
            aiden_domain::service::check_name(name)?;
        }
        write_tx!(self, |tx| {
            let current: MetricDefinition = store::get_definition(&mut tx, id)
                .await?
                .ok_or(Rule::NotFound)?;
            check_immutable(&patch, current.scope, current.data_type)?;
            let aggregation = patch.aggregation.unwrap_or(current.aggregation);
            let retention = patch.retention_days.unwrap_or(current.retention_days);
            check_definition(aggregation, current.data_type, retention)?;
            let at = now();
            let name = patch.name.clone().unwrap_or(current.name.clone());
            let description = patch
                .description
                .clone()
                .unwrap_or(current.description.clone());
            let state = DefinitionState {
                id,
                name: &name,
                description: description.as_deref(),
                scope: current.scope.as_str(),
                aggregation: aggregation.as_str(),
                data_type: current.data_type.as_str(),
                retention_days: retention,
                by: caller.id.as_str(),
                now: &at,
            };
            ensure_name_free(&mut tx, &state).await?;
            if !store::update_definition(&mut tx, &state, current.revision).await? {
                return Err(crate::Error::LostRace);
            }
            Ok(())
        })?;
        self.metric_definition_row(id).await
    }

    /// MET-2: a definition with values goes only with `cascade` (its values with it).
    pub async fn delete_metric_definition(
        &self,
        caller: &Caller,
        id: &str,
        cascade: bool,
    ) -> Result<()> {
        ensure_admin(caller)?;
        write_tx!(self, |tx| {
            if store::get_definition(&mut tx, id).await?.is_none() {
                return Err(Rule::NotFound.into());
            }
            let values = store::count_values(&mut tx, id).await?;
            if values > 0 && !cascade {
                return Err(Rule::referenced(
                    "MET-2",
                    format!("the metric has {values} values: delete with ?cascade=true"),
                )
                .into());
            }
            store::delete_definition(&mut tx, id).await?;
            Ok(())
        })
    }

    /// `POST /v1/metric-values` (MET-1): appended for an entity of the definition's scope that
    /// the caller can see.
    pub async fn record_metric_value(
        &self,
        caller: &Caller,
        input: NewMetricValue,
    ) -> Result<MetricValue> {
        if let Some(d) = &input.dimensions {
            check_dimensions(d)?;
        }
        let at = now();
        let timestamp = input.timestamp.clone().unwrap_or_else(|| at.clone());
        let at_ms = range_ms(Some(&timestamp), "/timestamp", 0)?;
        let id = Id::generate();
        let value_text = input.value.to_string();
        let dimensions = input.dimensions.as_ref().map(Value::to_string);
        write_tx!(self, |tx| {
            let definition: MetricDefinition = store::get_definition(&mut tx, &input.metric_id)
                .await?
                .ok_or_else(|| {
                    Rule::invariant("MET-1", "/metricId", "no such metric definition")
                })?;
            let measured = typed_value(definition.data_type, &input.value)?;
            let kind = store::scope_kind(definition.scope);
            if !store::entity_visible(
                &mut tx,
                kind,
                &input.entity_id,
                caller.id.as_str(),
                caller.is_admin(),
            )
            .await?
            {
                return Err(Rule::invariant(
                    "MET-1",
                    "/entityId",
                    format!("no such {} (the metric's scope)", definition.scope.as_str()),
                )
                .into());
            }
            let new = store::NewValue {
                id: id.as_str(),
                metric_id: &input.metric_id,
                entity_id: &input.entity_id,
                value: &value_text,
                number: measured.number,
                at: at_ms,
                timestamp: &timestamp,
                dimensions: dimensions.as_deref(),
                by: caller.id.as_str(),
                now: &at,
            };
            if !store::create_value(&mut tx, kind, &new).await? {
                return Err(crate::Error::LostRace);
            }
            Ok(())
        })?;
        Ok(MetricValue {
            id: id.to_string(),
            metric_id: input.metric_id,
            entity_id: input.entity_id,
            value: input.value,
            timestamp,
            dimensions: input.dimensions,
            created_at: Some(at),
        })
    }

    /// `GET /v1/metric-values`: an admin reads any; a user names an entity they can see.
    pub async fn metric_values(
        &self,
        caller: &Caller,
        q: MetricValueQuery,
        page: PageRequest,
    ) -> Result<Page<MetricValue>> {
        let limit = page.limit()?;
        let before = page.cursor.clone().unwrap_or_default();
        let mut rows = self.read_values(caller, &q, &before, limit + 1).await?.1;
        let next_cursor = if rows.len() as i64 > limit {
            rows.truncate(limit as usize);
            rows.last().map(|v| v.id.clone())
        } else {
            None
        };
        Ok(Page {
            items: rows.into_iter().map(MetricValue::from).collect(),
            next_cursor,
        })
    }

    /// `GET /v1/metric-values/aggregate`: the definition's aggregation over the range, whole
    /// or grouped by `entityId` or a dimension.
    pub async fn aggregate_metric_values(
        &self,
        caller: &Caller,
        q: MetricValueQuery,
    ) -> Result<Aggregate> {
        let (definition, rows) = self.read_values(caller, &q, "", MAX_AGGREGATED + 1).await?;
        if rows.len() as i64 > MAX_AGGREGATED {
            return Err(Rule::validation(
                "/from",
                format!("more than {MAX_AGGREGATED} values in range: narrow it"),
            )
            .into());
        }
        let point = |r: &ValueRow| Point {
            at_ms: r.at,
            number: r.number,
        };
        let (agg, ty) = (definition.aggregation, definition.data_type);
        let Some(by) = q.group_by.as_deref() else {
            let points: Vec<Point> = rows.iter().map(point).collect();
            return Ok(Aggregate {
                aggregation: agg,
                value: Some(aggregate(agg, ty, &points)),
                groups: None,
            });
        };
        let mut groups: std::collections::BTreeMap<Option<String>, Vec<Point>> = Default::default();
        for r in &rows {
            let key = if by == "entityId" {
                Some(r.entity_id.clone())
            } else {
                r.dimensions
                    .as_deref()
                    .and_then(|d| serde_json::from_str::<Value>(d).ok())
                    .and_then(|d| d.get(by).cloned())
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            };
            groups.entry(key).or_default().push(point(r));
        }
        Ok(Aggregate {
            aggregation: agg,
            value: None,
            groups: Some(
                groups
                    .into_iter()
                    .map(|(key, points)| Group {
                        key,
                        value: aggregate(agg, ty, &points),
                    })
                    .collect(),
            ),
        })
    }

    /// The definition and its values in range, after the read rule: admin, or an entity the
    /// caller can see.
    async fn read_values(
        &self,
        caller: &Caller,
        q: &MetricValueQuery,
        before: &str,
        limit: i64,
    ) -> Result<(MetricDefinition, Vec<ValueRow>)> {
        let from = range_ms(q.from.as_deref(), "/from", i64::MIN)?;
        let to = range_ms(q.to.as_deref(), "/to", i64::MAX)?;
        read_tx!(self, |tx| {
            let definition: MetricDefinition = store::get_definition(&mut tx, &q.metric_id)
                .await?
                .ok_or(Rule::NotFound)?;
            if !caller.is_admin() {
                let entity = q.entity_id.as_deref().ok_or_else(|| {
                    Rule::Forbidden("name an entityId you can see (or ask an admin)".into())
                })?;
                let kind = store::scope_kind(definition.scope);
                if !store::entity_visible(&mut tx, kind, entity, caller.id.as_str(), false).await? {
                    return Err(Rule::NotFound.into());
                }
            }
            let filter = store::ValueFilter {
                metric_id: &q.metric_id,
                entity_id: q.entity_id.as_deref(),
                from,
                to,
                before,
                limit,
            };
            let rows = store::list_values(&mut tx, &filter).await?;
            Ok((definition, rows))
        })
    }

    /// MET-4: removes values past their definition's retention, in batches; how many.
    pub async fn sweep_metric_values(&self) -> Result<i64> {
        const BATCH: i64 = 5_000;
        let mut removed = 0;
        loop {
            let now_ms = chrono::Utc::now().timestamp_millis();
            let n = write_tx!(self, |tx| {
                Ok(store::sweep(&mut tx, now_ms, BATCH).await?)
            })?;
            removed += n;
            if n < BATCH {
                return Ok(removed);
            }
        }
    }
}

/// MET-1: names are unique within a scope (409 naming the rule).
async fn ensure_name_free(tx: &mut aiden_graph::Tx, state: &DefinitionState<'_>) -> Result<()> {
    if store::name_taken(tx, state).await? {
        return Err(Rule::referenced(
            "MET-1",
            format!("a {} metric is already named '{}'", state.scope, state.name),
        )
        .into());
    }
    Ok(())
}
