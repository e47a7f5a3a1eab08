//! A file's name relative to the workspace, as the bytes the file system holds: git gives them
//! with `-z`, Unix takes them as an OsStr, Lua holds them in a string. A name need not be UTF-8,
//! and must never be read as text on the way (a lossy read writes a new file named with U+FFFD).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(pub Vec<u8>);

impl Name {
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }

    /// For messages: the name, its bytes that are not UTF-8 as U+FFFD.
    pub fn lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(s.as_bytes().to_vec())
    }
}

impl From<&[u8]> for Name {
    fn from(b: &[u8]) -> Name {
        Name(b.to_vec())
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// In turns.json (JSON, so UTF-8): a UTF-8 name as a string, any other as the array of its
/// bytes — never confused with a string, and read back exactly.
impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => self.0.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Bytes(Vec<u8>),
        }
        Ok(match Either::deserialize(d)? {
            Either::Text(t) => Name(t.into_bytes()),
            Either::Bytes(b) => Name(b),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_is_not_utf8_goes_through_json_byte_for_byte() {
        let names = vec![Name(b"caf\xe9.txt".to_vec()), Name::from("plain.txt"), Name::from("[1,2]")];
        let text = serde_json::to_string(&names).unwrap();
        assert_eq!(text, r#"[[99,97,102,233,46,116,120,116],"plain.txt","[1,2]"]"#);
        assert_eq!(serde_json::from_str::<Vec<Name>>(&text).unwrap(), names);
    }
}
