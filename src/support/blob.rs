//! A text's git blob id (SHA-1 of `blob <size>\0<bytes>`): what the user accepted in a review is
//! recorded by it, and compared with what landed on disk (a file read back, or the blob a
//! checkpoint's tree holds for it) without keeping the text.

use sha1::{Digest, Sha1};

/// The id git gives no file at all (`git diff --raw`'s all zeros): what a review showed of a
/// file that was not there.
pub const NO_FILE: &str = "0000000000000000000000000000000000000000";

/// What a review showed of a file it could not read: no blob's id, so it matches no turn's
/// start (a change before that review is not reviewed by it; only the user's own write, whose
/// left is unknown, is trusted).
pub const UNREAD: &str = "unread";

/// The id git gives `bytes` as a blob, in lowercase hex.
pub fn blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`, and the empty blob.
        assert_eq!(super::blob_id(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(super::blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }
}
