//! Routes: Metric definitions and values.

use aiden_service::Page;

use super::{route, Table};
use crate::openapi::Op;

pub(super) fn routes(t: Table) -> Table {
    use crate::handlers::measurements as mt;
    use aiden_domain::metric::{MetricDefinitionPatch, NewMetricDefinition};
    use aiden_service::measurements::{
        Aggregate, MetricDefinition, MetricValue, MetricValueQuery, NewMetricValue,
    };
    let t = route!(
        t,
        POST,
        "/v1/metric-definitions",
        mt::create_definition,
        Op::new("Define a metric (admin; MET-1 name unique in its scope, MET-3)")
            .body::<NewMetricDefinition>()
            .created::<MetricDefinition>()
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/metric-definitions",
        mt::list_definitions,
        Op::new("Metric definitions (admin)")
            .paged()
            .ok::<Page<MetricDefinition>>()
            .errors(&[403])
    );
    let t = route!(
        t,
        GET,
        "/v1/metric-definitions/{id}",
        mt::get_definition,
        Op::new("A metric definition (any caller: to write values of its type)")
            .ok::<MetricDefinition>()
    );
    let t = route!(
        t,
        PATCH,
        "/v1/metric-definitions/{id}",
        mt::patch_definition,
        Op::new("Change a metric's name, description, aggregation or retention (admin; MET-3)")
            .body::<MetricDefinitionPatch>()
            .ok::<MetricDefinition>()
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/metric-definitions/{id}",
        mt::delete_definition,
        Op::new("Delete a metric (admin); with values only with ?cascade=true (MET-2)")
            .query::<mt::CascadeQuery>()
            .no_content()
            .errors(&[403, 409])
    );
    let t = route!(
        t,
        POST,
        "/v1/metric-values",
        mt::record_value,
        Op::new("Append a measurement of an entity you can see (MET-1)")
            .body::<NewMetricValue>()
            .created_unlocated::<MetricValue>()
            .errors(&[422])
    );
    let t = route!(
        t,
        GET,
        "/v1/metric-values",
        mt::list_values,
        Op::new("Measurements in [from, to), newest first (an admin: any; a user: name an entityId you can see)")
            .query::<mt::ValuesQuery>()
            .ok::<Page<MetricValue>>()
            .errors(&[403, 404])
    );
    route!(
        t,
        GET,
        "/v1/metric-values/aggregate",
        mt::aggregate,
        Op::new("The metric's aggregation over [from, to): {value}, or {groups} by entityId or a dimension")
            .query::<MetricValueQuery>()
            .ok::<Aggregate>()
            .errors(&[403, 404])
    )
}
