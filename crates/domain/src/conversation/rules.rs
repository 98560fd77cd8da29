//! The structural rules a mutation must pass before anything is written: where a new Turn or
//! Alternative attaches (TURN-3), which Alternative may become active (TURN-2), what an
//! Alternative of a given Turn may carry, and that archived conversations are read-only.

use super::{AltState, Speaker, Status, MAX_CONTENT_CHARS};
use crate::Error;

/// A stored Alternative, as much as the rules need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltFacts {
    pub id: String,
    pub is_active: bool,
    pub state: AltState,
}

/// A stored Turn with its Alternatives.
#[derive(Debug, Clone)]
pub struct TurnFacts {
    pub id: String,
    pub conversation_id: String,
    pub speaker: Speaker,
    pub sequence: i64,
    pub parent_turn_id: Option<String>,
    pub alternatives: Vec<AltFacts>,
}

impl TurnFacts {
    pub fn active(&self) -> Option<&AltFacts> {
        self.alternatives.iter().find(|a| a.is_active)
    }
}

/// Where a new Alternative attaches: the parent Turn and the exact parent Alternative it
/// responds to, and the new Turn's depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub parent_turn_id: Option<String>,
    pub parent_alternative_id: Option<String>,
    pub sequence: i64,
}

impl Attachment {
    pub const ROOT: Attachment = Attachment {
        parent_turn_id: None,
        parent_alternative_id: None,
        sequence: 1,
    };
}

pub fn ensure_writable(status: Status) -> Result<(), Error> {
    match status {
        Status::Active => Ok(()),
        Status::Archived => Err(Error::conflict(
            "the conversation is archived; set status to active to continue it",
        )),
    }
}

pub fn check_content(content: &str) -> Result<(), Error> {
    if content.trim().is_empty() {
        return Err(Error::validation("/content", "must not be empty"));
    }
    if content.chars().count() > MAX_CONTENT_CHARS {
        return Err(Error::validation(
            "/content",
            format!("longer than {MAX_CONTENT_CHARS} characters"),
        ));
    }
    Ok(())
}

/// TURN-3: a Turn of a conversation that has turns needs a parent Turn of the same conversation,
/// and its Alternative responds to an Alternative of that parent (by default the active one).
/// A root has neither. The parent Alternative must have content to respond to (409 otherwise).
pub fn attach(
    conversation_id: &str,
    has_turns: bool,
    requested_parent: Option<&str>,
    parent: Option<&TurnFacts>,
    requested_alternative: Option<&str>,
) -> Result<Attachment, Error> {
    let Some(parent_id) = requested_parent else {
        if has_turns {
            return Err(Error::invariant(
                "TURN-3",
                "/parentTurnId",
                "the conversation has turns: a new turn needs parentTurnId (only the first turn is a root)",
            ));
        }
        if requested_alternative.is_some() {
            return Err(Error::invariant(
                "TURN-3",
                "/parentAlternativeId",
                "a root turn's alternatives respond to nothing",
            ));
        }
        return Ok(Attachment::ROOT);
    };
    let parent = parent
        .filter(|p| p.conversation_id == conversation_id && p.id == parent_id)
        .ok_or_else(|| {
            Error::invariant(
                "TURN-3",
                "/parentTurnId",
                format!("turn `{parent_id}` is not a turn of this conversation"),
            )
        })?;
    respond_within(parent, requested_alternative).map(|alt| Attachment {
        parent_turn_id: Some(parent.id.clone()),
        parent_alternative_id: Some(alt),
        sequence: parent.sequence + 1,
    })
}

/// TURN-3 for another Alternative of an existing Turn: it attaches where the Turn does, to the
/// requested Alternative of the parent Turn or the parent's active one.
pub fn attach_sibling(
    turn: &TurnFacts,
    parent: Option<&TurnFacts>,
    requested_alternative: Option<&str>,
) -> Result<Attachment, Error> {
    match (&turn.parent_turn_id, parent) {
        (None, _) => attach(
            &turn.conversation_id,
            false,
            None,
            None,
            requested_alternative,
        ),
        (Some(pid), parent) => attach(
            &turn.conversation_id,
            true,
            Some(pid),
            parent,
            requested_alternative,
        ),
    }
}

fn respond_within(parent: &TurnFacts, requested: Option<&str>) -> Result<String, Error> {
    let alt = match requested {
        Some(id) => parent
            .alternatives
            .iter()
            .find(|a| a.id == id)
            .ok_or_else(|| {
                Error::invariant(
                    "TURN-3",
                    "/parentAlternativeId",
                    format!(
                        "`{id}` is not an alternative of the parent turn `{}`",
                        parent.id
                    ),
                )
            })?,
        None => parent.active().ok_or_else(|| {
            Error::invariant(
                "TURN-2",
                "/parentTurnId",
                "the parent turn has no active alternative",
            )
        })?,
    };
    match alt.state {
        AltState::Valid => Ok(alt.id.clone()),
        AltState::Generating => Err(Error::conflict(format!(
            "alternative `{}` is still generating; wait for it or respond to another",
            alt.id
        ))),
        AltState::Failed => Err(Error::conflict(format!(
            "alternative `{}` failed and has no content to respond to",
            alt.id
        ))),
    }
}

/// TURN-2: only an Alternative of this very Turn can become its active one.
pub fn switch_target(turn: &TurnFacts, alternative_id: &str) -> Result<(), Error> {
    if turn.alternatives.iter().any(|a| a.id == alternative_id) {
        Ok(())
    } else {
        Err(Error::invariant(
            "TURN-2",
            "/alternativeId",
            format!(
                "`{alternative_id}` is not an alternative of turn `{}`",
                turn.id
            ),
        ))
    }
}

/// What a new Alternative of `speaker`'s Turn carries: content from a person, a Process for an
/// agent (TURN-5: only agent Alternatives are `EXECUTED_BY` a Process).
pub enum AlternativeKind<'a> {
    Content(&'a str),
    Process(&'a str),
}

pub fn alternative_kind<'a>(
    speaker: Speaker,
    content: Option<&'a str>,
    process_id: Option<&'a str>,
) -> Result<AlternativeKind<'a>, Error> {
    match (speaker, content, process_id) {
        (Speaker::Agent, None, Some(p)) => Ok(AlternativeKind::Process(p)),
        (Speaker::Agent, Some(_), None) => Err(Error::invariant(
            "TURN-5",
            "/content",
            "an agent turn's alternatives are generated by a Process: send processId, not content",
        )),
        (_, Some(_), Some(_)) => Err(Error::validation(
            "/processId",
            "send content or processId, not both",
        )),
        (Speaker::Agent, None, None) => Err(Error::validation(
            "/processId",
            "required for an agent turn",
        )),
        (_, Some(c), None) => {
            check_content(c)?;
            Ok(AlternativeKind::Content(c))
        }
        (_, None, Some(_)) => Err(Error::invariant(
            "TURN-5",
            "/processId",
            "only agent turns are generated by a Process; send content",
        )),
        (_, None, None) => Err(Error::validation("/content", "required")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(id: &str, active: bool, state: AltState) -> AltFacts {
        AltFacts {
            id: id.into(),
            is_active: active,
            state,
        }
    }

    fn turn(id: &str, conv: &str, alts: Vec<AltFacts>) -> TurnFacts {
        TurnFacts {
            id: id.into(),
            conversation_id: conv.into(),
            speaker: Speaker::User,
            sequence: 4,
            parent_turn_id: Some("t0".into()),
            alternatives: alts,
        }
    }

    fn invariant(e: Error) -> &'static str {
        e.details()[0].invariant.unwrap()
    }

    #[test]
    fn turn_3_root_only_when_the_conversation_is_empty() {
        assert_eq!(
            attach("c", false, None, None, None).unwrap(),
            Attachment::ROOT
        );
        assert_eq!(
            invariant(attach("c", true, None, None, None).unwrap_err()),
            "TURN-3"
        );
        assert_eq!(
            invariant(attach("c", false, None, None, Some("a")).unwrap_err()),
            "TURN-3"
        );
    }

    #[test]
    fn turn_3_parent_must_be_in_the_same_conversation() {
        let p = turn("t", "other", vec![alt("a", true, AltState::Valid)]);
        let e = attach("c", true, Some("t"), Some(&p), None).unwrap_err();
        assert_eq!(invariant(e), "TURN-3");
        let e = attach("c", true, Some("t"), None, None).unwrap_err();
        assert_eq!(invariant(e), "TURN-3");
    }

    #[test]
    fn turn_3_responds_to_an_alternative_of_the_parent_default_active() {
        let p = turn(
            "t",
            "c",
            vec![
                alt("a", false, AltState::Valid),
                alt("b", true, AltState::Valid),
            ],
        );
        let at = attach("c", true, Some("t"), Some(&p), None).unwrap();
        assert_eq!(at.parent_alternative_id.as_deref(), Some("b"));
        assert_eq!(at.sequence, 5, "TURN-1: depth is parent + 1");
        let at = attach("c", true, Some("t"), Some(&p), Some("a")).unwrap();
        assert_eq!(at.parent_alternative_id.as_deref(), Some("a"));
        let e = attach("c", true, Some("t"), Some(&p), Some("zz")).unwrap_err();
        assert_eq!(invariant(e), "TURN-3");
    }

    #[test]
    fn responding_to_a_generating_or_failed_alternative_is_a_conflict() {
        for state in [AltState::Generating, AltState::Failed] {
            let p = turn("t", "c", vec![alt("a", true, state)]);
            let e = attach("c", true, Some("t"), Some(&p), None).unwrap_err();
            assert!(matches!(e, Error::Conflict { .. }), "{state:?}");
        }
    }

    #[test]
    fn turn_2_switch_only_within_the_turn() {
        let t = turn("t", "c", vec![alt("a", true, AltState::Valid)]);
        assert!(switch_target(&t, "a").is_ok());
        assert_eq!(invariant(switch_target(&t, "x").unwrap_err()), "TURN-2");
    }

    #[test]
    fn turn_5_only_agent_turns_take_a_process() {
        assert!(matches!(
            alternative_kind(Speaker::Agent, None, Some("p")),
            Ok(AlternativeKind::Process("p"))
        ));
        assert!(alternative_kind(Speaker::Agent, Some("x"), None).is_err());
        assert!(alternative_kind(Speaker::User, None, Some("p")).is_err());
        assert!(alternative_kind(Speaker::User, Some(" "), None).is_err());
        assert!(matches!(
            alternative_kind(Speaker::System, Some("hi"), None),
            Ok(AlternativeKind::Content("hi"))
        ));
    }
}
