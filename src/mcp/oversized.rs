//! A message over `max_message_size` is never held in memory: the transport discards its
//! bytes as they arrive, running them through [`Scan`], a streaming JSON tokenizer that keeps
//! only what the answer needs (the top-level `id` and `method`, `params.name`, and the
//! openDiff arguments `tab_name`, `new_file_path` and `filePath`), each capped in length. Then the call is
//! answered (an openDiff DIFF_REJECTED, any other request an error) before the connection is
//! closed with 1009, and the user is told in one line.

use crate::agents::Agent;
use crate::protocol::jsonrpc::{self, Id, RpcError, INVALID_REQUEST};

/// The longest value kept (a path); anything longer is not kept.
const CAP: usize = 4096;

/// Where a value sits, as far as the answer cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Params,
    Name,
    Arguments,
    TabName,
    NewFilePath,
    FilePath,
    Other,
}

impl Key {
    fn of(name: &str) -> Key {
        match name {
            "id" => Key::Id,
            "method" => Key::Method,
            "params" => Key::Params,
            "name" => Key::Name,
            "arguments" => Key::Arguments,
            "tab_name" => Key::TabName,
            "new_file_path" => Key::NewFilePath,
            "filePath" => Key::FilePath,
            _ => Key::Other,
        }
    }
}

/// A container the tokenizer is in (the first few levels; deeper ones are only counted).
#[derive(Debug, Clone, Copy)]
struct Level {
    object: bool,
    /// In an object: the next string is a key.
    want_key: bool,
    /// The key of the value being read at this level.
    key: Key,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Between,
    Str { escaped: bool },
    Scalar,
}

/// What a token being read will be kept as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    Nothing,
    KeyName,
    Value(Key),
}

/// The streaming scanner. Feed it the message's bytes in any chunks.
#[derive(Debug)]
pub struct Scan {
    lex: Lex,
    levels: Vec<Level>,
    /// Levels beyond `levels`' capacity.
    deeper: usize,
    keep: Keep,
    token: Vec<u8>,
    too_long: bool,
    pub id: Option<Id>,
    pub method: Option<String>,
    pub tool: Option<String>,
    pub tab_name: Option<String>,
    pub new_file_path: Option<String>,
    /// The file of an openDiff that names its review by it (no tab_name).
    pub file_path: Option<String>,
}

const TRACKED_LEVELS: usize = 3;

impl Default for Scan {
    fn default() -> Self {
        Scan {
            lex: Lex::Between,
            levels: Vec::with_capacity(TRACKED_LEVELS),
            deeper: 0,
            keep: Keep::Nothing,
            token: Vec::new(),
            too_long: false,
            id: None,
            method: None,
            tool: None,
            tab_name: None,
            new_file_path: None,
            file_path: None,
        }
    }
}

impl Scan {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        match self.lex {
            Lex::Str { escaped } => {
                self.push(b);
                self.lex = match (escaped, b) {
                    (false, b'\\') => Lex::Str { escaped: true },
                    (false, b'"') => {
                        self.token_done();
                        Lex::Between
                    }
                    _ => Lex::Str { escaped: false },
                };
            }
            Lex::Scalar if !matches!(b, b',' | b'}' | b']' | b':') && !b.is_ascii_whitespace() => {
                self.push(b)
            }
            Lex::Scalar => {
                self.token_done();
                self.lex = Lex::Between;
                self.between(b);
            }
            Lex::Between => self.between(b),
        }
    }

    fn between(&mut self, b: u8) {
        match b {
            b'{' | b'[' => self.open(b == b'{'),
            b'}' | b']' => self.close(),
            b',' => {
                if let Some(l) = self.current() {
                    l.want_key = l.object;
                }
            }
            b'"' => {
                self.start_token();
                self.push(b);
                self.lex = Lex::Str { escaped: false };
            }
            b':' => {}
            _ if b.is_ascii_whitespace() => {}
            _ => {
                self.start_token();
                self.push(b);
                self.lex = Lex::Scalar;
            }
        }
    }

    fn current(&mut self) -> Option<&mut Level> {
        if self.deeper > 0 {
            return None;
        }
        self.levels.last_mut()
    }

    fn open(&mut self, object: bool) {
        if self.levels.len() < TRACKED_LEVELS && self.deeper == 0 {
            self.levels.push(Level {
                object,
                want_key: object,
                key: Key::Other,
            });
        } else {
            self.deeper += 1;
        }
    }

    fn close(&mut self) {
        if self.deeper > 0 {
            self.deeper -= 1;
        } else {
            self.levels.pop();
        }
    }

    /// What a token starting here is kept as: a key's name, a value the answer needs, or not.
    fn start_token(&mut self) {
        self.token.clear();
        self.too_long = false;
        self.keep = match self.current() {
            Some(l) if l.object && l.want_key => Keep::KeyName,
            Some(_) => Keep::Value(self.value_wanted()),
            None => Keep::Nothing,
        };
        if self.keep == Keep::Value(Key::Other) {
            self.keep = Keep::Nothing;
        }
    }

    /// The key of the value at hand when the answer needs it (else Other).
    fn value_wanted(&self) -> Key {
        let keys: Vec<Key> = self.levels.iter().map(|l| l.key).collect();
        match keys[..] {
            [k @ (Key::Id | Key::Method)] => k,
            [Key::Params, Key::Name] => Key::Name,
            [Key::Params, Key::Arguments, k @ (Key::TabName | Key::NewFilePath | Key::FilePath)] => k,
            _ => Key::Other,
        }
    }

    fn push(&mut self, b: u8) {
        if self.keep == Keep::Nothing {
            return;
        }
        if self.token.len() < CAP + 2 {
            self.token.push(b);
        } else {
            self.too_long = true;
        }
    }

    fn token_done(&mut self) {
        let keep = std::mem::replace(&mut self.keep, Keep::Nothing);
        let text = (!self.too_long).then(|| String::from_utf8_lossy(&self.token).into_owned());
        let string = || text.as_deref().and_then(|t| serde_json::from_str::<String>(t).ok());
        match keep {
            Keep::Nothing => {}
            Keep::KeyName => {
                let key = string().map_or(Key::Other, |k| Key::of(&k));
                if let Some(l) = self.current() {
                    l.key = key;
                    l.want_key = false;
                }
            }
            Keep::Value(Key::Id) => self.id = text.as_deref().and_then(Id::from_raw),
            Keep::Value(Key::Method) => self.method = string(),
            Keep::Value(Key::Name) => self.tool = string(),
            Keep::Value(Key::TabName) => self.tab_name = string(),
            Keep::Value(Key::NewFilePath) => self.new_file_path = string(),
            Keep::Value(Key::FilePath) => self.file_path = string(),
            Keep::Value(_) => {}
        }
    }

    /// The arguments kept, by their names (what a tool's abandon context reads).
    fn arguments(&self) -> serde_json::Value {
        let named = [("tab_name", &self.tab_name), ("new_file_path", &self.new_file_path), ("filePath", &self.file_path)];
        named.into_iter().filter_map(|(k, v)| Some((k.to_owned(), serde_json::Value::String(v.clone()?)))).collect::<serde_json::Map<_, _>>().into()
    }

    /// The scan is over (the message ended): a scalar at the very end is complete.
    pub fn finish(&mut self) {
        if self.lex == Lex::Scalar {
            self.token_done();
            self.lex = Lex::Between;
        }
    }
}

/// A message over the limit, read and discarded: what it said, and how big it was.
#[derive(Debug)]
pub struct Oversized {
    pub size: u64,
    pub limit: usize,
    pub scan: Scan,
}

impl Oversized {
    /// The tool of `agent`'s the message called, if it was a tools/call.
    pub fn tool(&self, agent: &Agent) -> Option<&'static crate::protocol::tools::Tool> {
        (self.scan.method.as_deref() == Some("tools/call")).then(|| agent.tool(self.scan.tool.as_deref()?)).flatten()
    }

    /// The answer owed before the Close, if the message was a request of `agent`'s.
    pub fn answer(&self, agent: &Agent) -> Option<String> {
        // A response of the agent's (to our request) has an id and no method: never answered.
        self.scan.method.as_ref()?;
        let id = self.scan.id.as_ref()?;
        let tool = self.tool(agent);
        let error = RpcError::new(
            INVALID_REQUEST,
            format!(
                "message of {} bytes is over the editor's limit of {} bytes (max_message_size)",
                self.size, self.limit
            ),
        );
        let outcome = match tool {
            Some(tool) => tool.owed(Err(error), tool.abandon_context(&self.scan.arguments()).as_deref()),
            None => Err(error),
        };
        Some(jsonrpc::outcome_frame(id, &outcome))
    }

    /// One line for the user; `closes`: the transport closes the connection over it.
    pub fn notice(&self, agent: &Agent, closes: bool) -> String {
        let what = match (self.scan.tool.as_deref(), self.scan.new_file_path.as_ref().or(self.scan.file_path.as_ref())) {
            (Some(t), Some(p)) => format!("{t} of {p}"),
            (Some(t), None) => t.to_owned(),
            (None, _) => self.scan.method.clone().unwrap_or_else(|| "message".into()),
        };
        format!(
            "the agent sent a {} message ({what}), over max_message_size ({}): it was {}{}; raise max_message_size in setup() to allow it",
            mib(self.size),
            mib(self.limit as u64),
            if self.answer(agent).is_some() { "rejected" } else { "dropped" },
            if closes { " and the connection closed" } else { "" },
        )
    }
}

/// The rejection owed to a message of `agent`'s dropped unread (a call of openDiff), if one is.
pub fn owed(agent: &Agent, scan: &Scan) -> Option<String> {
    let id = scan.id.as_ref()?;
    if scan.method.as_deref() != Some("tools/call") {
        return None;
    }
    let tool = agent.tool(scan.tool.as_deref()?)?;
    let closing = Err(RpcError::internal("the connection is closing"));
    let outcome = tool.owed(closing, tool.abandon_context(&scan.arguments()).as_deref());
    outcome.is_ok().then(|| jsonrpc::outcome_frame(id, &outcome))
}

fn mib(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan_in_chunks(text: &str, chunk: usize) -> Scan {
        let mut s = Scan::default();
        for part in text.as_bytes().chunks(chunk.max(1)) {
            s.feed(part);
        }
        s.finish();
        s
    }

    #[test]
    fn finds_what_the_answer_needs_in_any_order_and_any_chunks() {
        let big = "x\"y\\".repeat(10_000);
        let messages = [
            json!({"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"openDiff","arguments":{
                "old_file_path":"/o","new_file_path":"/w/é.rs","new_file_contents":big,"tab_name":"pi-edit:7"}}}),
            // The id last, the arguments first, nested noise around.
            json!({"params":{"arguments":{"new_file_contents":big,"deep":[[{"id":9}]],"tab_name":"t\"q"},"name":"openDiff"},
                   "method":"tools/call","jsonrpc":"2.0","id":12345678901234567890u64}),
            json!({"jsonrpc":"2.0","method":"notifications/x","params":{"id":"not the id","blob":big}}),
        ];
        for m in &messages {
            let text = m.to_string();
            for chunk in [1, 3, 7, 4096, text.len()] {
                let s = scan_in_chunks(&text, chunk);
                let want_id = m.get("id").map(|v| v.to_string());
                assert_eq!(s.id.as_ref().map(|i| i.raw().to_owned()), want_id, "chunk {chunk}");
                assert_eq!(s.method.as_deref(), m["method"].as_str());
                assert_eq!(s.tool.as_deref(), m["params"]["name"].as_str());
                assert_eq!(s.tab_name.as_deref(), m["params"]["arguments"]["tab_name"].as_str());
                assert_eq!(s.new_file_path.as_deref(), m["params"]["arguments"]["new_file_path"].as_str());
            }
        }
    }

    #[test]
    fn an_oversized_open_diff_is_rejected_and_other_requests_get_an_error() {
        let text = json!({"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"openDiff",
            "arguments":{"new_file_path":"/a.rs","new_file_contents":"x","tab_name":"pi-write:1"}}})
        .to_string();
        let o = Oversized { size: 70 << 20, limit: 64 << 20, scan: scan_in_chunks(&text, 5) };
        let a: serde_json::Value = serde_json::from_str(&o.answer(crate::agents::HOME).unwrap()).unwrap();
        assert_eq!(a["id"], "d");
        assert_eq!(a["result"]["content"][0]["text"], "DIFF_REJECTED");
        assert_eq!(a["result"]["content"][1]["text"], "pi-write:1");
        let n = o.notice(crate::agents::HOME, true);
        assert!(n.contains("70.0 MiB") && n.contains("max_message_size (64.0 MiB)") && n.contains("/a.rs"), "{n}");
        assert!(n.contains("rejected and the connection closed"), "{n}");
        assert!(o.notice(crate::agents::HOME, false).contains("rejected; raise"), "a transport that goes on");
        let text = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"getDiagnostics"}}).to_string();
        let o = Oversized { size: 2000, limit: 1024, scan: scan_in_chunks(&text, 2) };
        let a: serde_json::Value = serde_json::from_str(&o.answer(crate::agents::HOME).unwrap()).unwrap();
        assert_eq!(a["error"]["code"], INVALID_REQUEST);
        // A notification, a response to our request, or garbage: nothing to answer.
        for text in ["{\"method\":\"x\"", r#"{"jsonrpc":"2.0","id":3,"result":{"suggestions":["x"]}}"#] {
            let o = Oversized { size: 2000, limit: 1024, scan: scan_in_chunks(text, 2) };
            assert!(o.answer(crate::agents::HOME).is_none(), "{text}");
        }
    }

    #[test]
    fn garbage_never_panics_and_keeps_nothing_unbounded() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let mut s = Scan::default();
            let mut bytes = Vec::new();
            for _ in 0..(rng % 400) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                bytes.push(b"{}[]\":,\\ a1-e\x00\xffn"[(rng % 16) as usize]);
            }
            s.feed(&bytes);
            s.finish();
            assert!(s.token.len() <= CAP + 2);
        }
        // A key or an id longer than the cap is simply not kept.
        let long = format!("{{\"id\":\"{}\",\"method\":\"m\"}}", "i".repeat(CAP * 2));
        let s = scan_in_chunks(&long, 100);
        assert!(s.id.is_none());
        assert_eq!(s.method.as_deref(), Some("m"));
    }
}
