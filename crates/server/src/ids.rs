//! Unguessable ids for responses (`cmpl-…`, `chatcmpl-…`) and requests (`x-request-id`).
//!
//! Sequential ids tell a client how many requests others made and let it guess their ids;
//! these are 128 random bits from the operating system (`getrandom`). Should the system's
//! source fail, the bits come from std's randomly keyed SipHash (`RandomState`) over the
//! time and a process-wide counter: still unguessable without the keys, and still unique.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// 32 lower-case hex digits (128 random bits).
pub fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = fallback();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 128 bits from two randomly keyed hashes of the time and a counter.
fn fallback() -> [u8; 16] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut out = [0u8; 16];
    for (half, chunk) in out.chunks_mut(8).enumerate() {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u64(count);
        hasher.write_usize(half);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_hex_unique_and_not_sequential() {
        let ids: Vec<String> = (0..1000).map(|_| random_hex()).collect();
        assert!(ids
            .iter()
            .all(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())));
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
        // Sequential ids share all but their last digits.
        assert_ne!(ids[0][..24], ids[1][..24]);
    }

    #[test]
    fn the_fallback_is_unique_too() {
        let ids: HashSet<[u8; 16]> = (0..1000).map(|_| fallback()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
