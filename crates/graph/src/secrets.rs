//! The one write of a Secret's ciphertext. The ciphertext is never read back through the
//! resource path (`doc` holds metadata only); only the execution path decrypts it.

use serde::Deserialize;

use crate::{cypher, query_file, Error, Tx};

#[derive(Deserialize)]
struct IdRow {
    #[allow(dead_code)]
    id: String,
}

pub async fn set_ciphertext(tx: &mut Tx, id: &str, encrypted_value: &str) -> Result<(), Error> {
    let q = cypher(query_file!("tool/set_secret_ciphertext.cypher"), None)
        .param("id", id)
        .param("encryptedValue", encrypted_value);
    tx.one::<IdRow>(q).await.map(|_| ())
}
