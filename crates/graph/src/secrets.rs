//! The one write of a Secret's ciphertext. The ciphertext is never read back through the
//! resource path (`doc` holds metadata only); only the execution path decrypts it.

use crate::{cypher, query_file, tx::IdRow, Error, Tx};

pub async fn set_ciphertext(tx: &mut Tx, id: &str, encrypted_value: &str) -> Result<(), Error> {
    let q = cypher(query_file!("secret/set_ciphertext.cypher"), None)
        .param("id", id)
        .param("encryptedValue", encrypted_value);
    tx.one::<IdRow>(q).await.map(|_| ())
}
