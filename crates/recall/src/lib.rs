//! Recall, shared by the API's service layer and the worker pools: the search over what a caller
//! owns (`search`), the client of the embedder content and queries are embedded with
//! (`Embedder`), and the merging of a user's Entity with the extracted one of the same thing
//! (`merges`, ENT-5). Pure decisions (fusion, the retrieved-context budget, which pairs merge)
//! live in `aiden_domain::knowledge`; statements in `aiden_graph`.

mod embedder;
pub mod merges;
mod search;

pub use embedder::{EmbedError, Embedded, Embedder};
pub use search::{search, search_by_meaning, search_remembered, SearchAnswer};
