//! Who points at a node: the facts behind SVC-5, SEC-5, TOOL-8 and PROC-10.

use serde::Deserialize;

use crate::{cypher, query_file, Error, Tx};

async fn count(tx: &mut Tx, text: &str, id: &str) -> Result<i64, Error> {
    tx.count(cypher(text, None).param("id", id)).await
}

pub async fn tools_using_service(tx: &mut Tx, id: &str) -> Result<i64, Error> {
    count(tx, query_file!("reference/tools_using_service.cypher"), id).await
}

pub async fn tools_using_secret(tx: &mut Tx, id: &str) -> Result<i64, Error> {
    count(tx, query_file!("reference/tools_using_secret.cypher"), id).await
}

pub async fn steps_calling_tool(tx: &mut Tx, id: &str) -> Result<i64, Error> {
    count(tx, query_file!("reference/steps_calling_tool.cypher"), id).await
}

#[derive(Debug, Deserialize)]
pub struct ProcessReferences {
    pub conversations: i64,
    pub alternatives: i64,
    pub callers: i64,
}

pub async fn process_references(tx: &mut Tx, id: &str) -> Result<ProcessReferences, Error> {
    let q = cypher(query_file!("reference/process_references.cypher"), None).param("id", id);
    Ok(tx.one(q).await?.unwrap_or(ProcessReferences {
        conversations: 0,
        alternatives: 0,
        callers: 0,
    }))
}
