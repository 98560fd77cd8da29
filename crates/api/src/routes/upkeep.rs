//! Routes: Memory upkeep: settings, Summaries, the introspection carousel.

use aiden_service::Page;

use super::{route, Table};
use crate::handlers::upkeep as m;
use crate::openapi::Op;

pub(super) fn routes(t: Table) -> Table {
    use aiden_domain::conversation::upkeep::{MemorySettings, SettingsPatch};
    use aiden_service::upkeep::{IntrospectionRecord, NewIntrospection, NoteCorrection};
    let t = route!(
        t,
        GET,
        "/v1/settings",
        m::get_settings,
        Op::new("Memory upkeep settings (admin)")
            .ok::<MemorySettings>()
            .errors(&[403])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/settings",
        m::patch_settings,
        Op::new("Change memory upkeep settings (admin; MEM-1..5, INT-1)")
            .body::<SettingsPatch>()
            .ok::<MemorySettings>()
            .errors(&[403, 409, 422])
    );
    let t = route!(
        t,
        PATCH,
        "/v1/summaries/{id}",
        m::patch_summary,
        Op::new(
            "Repair a Summary (admin): tokenCount, corrected content (a new Episode; the old kept)"
        )
        .body::<aiden_domain::conversation::SummaryPatch>()
        .ok::<aiden_service::views::SummaryRecord>()
        .errors(&[403, 404, 409, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/summaries/{id}",
        m::delete_summary,
        Op::new("Delete a Summary (admin): working memory falls back to the path (409 SUM-1 while another summarizes it)")
            .no_content()
            .errors(&[403, 404, 409])
    );
    let t = route!(
        t,
        GET,
        "/v1/introspections",
        m::carousel,
        Op::new("The caller's introspection carousel, by position (INT-1)")
            .ok::<Page<IntrospectionRecord>>()
    );
    let t = route!(
        t,
        GET,
        "/v1/introspections/archive",
        m::archive,
        Op::new("The caller's replaced introspection notes, newest first")
            .ok::<Page<IntrospectionRecord>>()
    );
    let t = route!(
        t,
        POST,
        "/v1/introspections",
        m::inject,
        Op::new("Inject a note into the caller's carousel (INT-1: the note in its position is archived)")
            .body::<NewIntrospection>()
            .created_unlocated::<IntrospectionRecord>()
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/introspections/{id}",
        m::retire,
        Op::new("Retire a note: it leaves the carousel, archived (INT-1); its position is free")
            .no_content()
            .errors(&[404])
    );
    route!(
        t,
        PUT,
        "/v1/introspections/{id}/content",
        m::correct,
        Op::new("Correct a current note: new content and Episode; the old ones are kept")
            .body::<NoteCorrection>()
            .ok::<IntrospectionRecord>()
            .errors(&[409, 422])
    )
}
