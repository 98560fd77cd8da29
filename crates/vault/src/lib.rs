//! Secret encryption (SEC-2): XChaCha20-Poly1305 under the master key, with the Secret's id as
//! associated data so a ciphertext cannot be moved to another Secret. Stored as
//! `v1:<base64(nonce ‖ ciphertext)>`. The key is never printed (no Debug of its bytes).
//!
//! A crate of its own so that what decrypts a Service's Secret to call it (the worker pools)
//! does not link the service layer and the engine.

use base64::{engine::general_purpose::STANDARD, Engine};
use chacha20poly1305::{
    aead::{Aead, AeadCore, KeyInit, OsRng, Payload},
    XChaCha20Poly1305, XNonce,
};
use zeroize::Zeroizing;

/// Why a key, a ciphertext or a plaintext was refused. Never carries key or secret material.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VaultError(pub &'static str);

const PREFIX: &str = "v1:";
const NONCE_LEN: usize = 24;

#[derive(Clone)]
pub struct Vault {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vault([REDACTED])")
    }
}

impl Vault {
    /// `AIDEN_MASTER_KEY`: base64 of exactly 32 bytes.
    pub fn from_base64(key: &str) -> Result<Self, VaultError> {
        let bytes = Zeroizing::new(
            STANDARD
                .decode(key.trim())
                .map_err(|_| VaultError("master key is not base64"))?,
        );
        if bytes.len() != 32 {
            return Err(VaultError("master key must be 32 bytes"));
        }
        let cipher =
            XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| VaultError("bad master key"))?;
        Ok(Self { cipher })
    }

    pub fn encrypt(&self, secret_id: &str, plaintext: &str) -> Result<String, VaultError> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ct = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: secret_id.as_bytes(),
                },
            )
            .map_err(|_| VaultError("encryption failed"))?;
        let mut blob = nonce.to_vec();
        blob.extend_from_slice(&ct);
        Ok(format!("{PREFIX}{}", STANDARD.encode(blob)))
    }

    pub fn decrypt(&self, secret_id: &str, stored: &str) -> Result<Zeroizing<String>, VaultError> {
        let blob = stored
            .strip_prefix(PREFIX)
            .ok_or(VaultError("unknown ciphertext format"))?;
        let blob = STANDARD
            .decode(blob)
            .map_err(|_| VaultError("corrupt ciphertext"))?;
        if blob.len() < NONCE_LEN {
            return Err(VaultError("corrupt ciphertext"));
        }
        let (nonce, ct) = blob.split_at(NONCE_LEN);
        let pt = self
            .cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: secret_id.as_bytes(),
                },
            )
            .map_err(|_| VaultError("ciphertext does not authenticate under this key"))?;
        String::from_utf8(pt)
            .map(Zeroizing::new)
            .map_err(|_| VaultError("plaintext is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sec_2_round_trips_and_binds_to_the_secret_id() {
        let vault = Vault::from_base64(&STANDARD.encode([7u8; 32])).unwrap();
        let stored = vault.encrypt("secret-a", "hunter2-plaintext").unwrap();
        assert!(!stored.contains("hunter2"));
        assert_eq!(
            vault.decrypt("secret-a", &stored).unwrap().as_str(),
            "hunter2-plaintext"
        );
        assert!(vault.decrypt("secret-b", &stored).is_err());
        let other = Vault::from_base64(&STANDARD.encode([8u8; 32])).unwrap();
        assert!(other.decrypt("secret-a", &stored).is_err());
    }
}
