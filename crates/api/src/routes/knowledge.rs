//! Routes: Entities, memories and search.

use aiden_domain::knowledge::memory::NewMemory;
use aiden_service::memories::MemoryRow;
use aiden_service::Page;

use super::{route, Table};
use crate::handlers::knowledge as k;
use crate::openapi::Op;

/// ENT-5: a merged Entity's uuid redirects to the Entity it merged into.
const MERGED: &str = "The Entity merged into another (ENT-5): `Location` names the same route \
                      of the Entity it merged into, which the caller may see";

pub(super) fn routes(t: Table) -> Table {
    use aiden_domain::knowledge::{entity::EntityReference, ActiveEntityFlags, NewEntity};
    use aiden_service::views::{EntityView, Items, ProposalDecision};
    let t = route!(
        t,
        POST,
        "/v1/entities",
        k::create_entity,
        Op::new("Create an Entity (name and summary required, source user; ENT-1)")
            .body::<NewEntity>()
            .created::<EntityView>()
            .links("/v1/entities", "uuid")
            .errors(&[409, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/entities",
        k::list_entities,
        Op::new("Entities the caller may see (?conversationId=, ?q= name filter)")
            .query::<k::EntityQuery>()
            .ok::<Page<EntityView>>()
            .errors(&[404])
    );
    let t = route!(
        t,
        GET,
        "/v1/entities/{id}",
        k::get_entity,
        Op::new("An Entity with its sources (creator, mentioning Episodes)")
            .ok::<EntityView>()
            .also::<k::EntityMerged>(308, MERGED)
    );
    let t = route!(
        t,
        GET,
        "/v1/entities/{id}/context",
        k::entity_page,
        Op::new("An Entity's page: the Entity, the caller's Alternatives that mention it, its facts and neighbours")
            .ok::<aiden_service::recall::EntityPage>()
            .also::<k::EntityMerged>(308, MERGED)
    );
    let t = route!(
        t,
        POST,
        "/v1/entities/{id}/confirm",
        k::confirm_entity,
        Op::new("Confirm an Entity an agent proposed to remember (it becomes yours)")
            .ok::<ProposalDecision>()
            .errors(&[409])
    );
    let t = route!(
        t,
        POST,
        "/v1/entities/{id}/reject",
        k::reject_entity,
        Op::new("Reject (remove) an Entity an agent proposed to remember")
            .ok::<ProposalDecision>()
            .errors(&[409])
    );
    let t = route!(
        t,
        GET,
        "/v1/memories",
        k::memories,
        Op::new("The caller's memories (SRCH-4), newest first").ok::<Page<MemoryRow>>()
    );
    let t = route!(
        t,
        POST,
        "/v1/memories",
        k::remember,
        Op::new(
            "Keep a memory (SRCH-4): the caller's alone, recalled in any of their conversations"
        )
        .body::<NewMemory>()
        .created_unlocated::<MemoryRow>()
        .errors(&[422])
    );
    let t = route!(
        t,
        DELETE,
        "/v1/memories/{id}",
        k::forget,
        Op::new("Forget a memory (SRCH-4): search and retrieved context no longer find it")
            .no_content()
            .errors(&[404])
    );
    let t = route!(
        t,
        GET,
        "/v1/search",
        k::search,
        Op::new(
            "Search what the caller owns by meaning, words and the graph (?q=, ?conversationId=, \
             ?kinds=episode,entity,fact,summary,introspection,memory, ?limit=); each hit with its \
             score and provenance"
        )
        .query::<k::SearchQuery>()
        .ok::<aiden_service::recall::SearchAnswer>()
        .errors(&[404, 422])
    );
    let t = route!(
        t,
        GET,
        "/v1/conversations/{id}/entities",
        k::conversation_entities,
        Op::new("The Conversation's active entities (HAS_ACTIVE_ENTITY)")
            .ok::<Items<EntityReference>>()
    );
    let t = route!(
        t,
        PUT,
        "/v1/conversations/{id}/entities/{uuid}",
        k::activate_entity,
        Op::new("Add an Entity to the Conversation's active entities, with its include flags")
            .body::<ActiveEntityFlags>()
            .ok::<EntityReference>()
            .errors(&[409])
    );
    route!(
        t,
        DELETE,
        "/v1/conversations/{id}/entities/{uuid}",
        k::deactivate_entity,
        Op::new("Remove an Entity from the Conversation's active entities").no_content()
    )
}
