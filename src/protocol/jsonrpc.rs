//! JSON-RPC 2.0 framing: classify one incoming text frame, and build outgoing frames.
//!
//! Ids are kept as the raw JSON text the peer sent and echoed byte for byte, so a string id stays
//! a string and a large number is never rounded through an f64.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(
            INVALID_PARAMS,
            format!("invalid params: {}", message.into()),
        )
    }
    pub fn internal(message: impl Into<String>) -> Self {
        RpcError::new(INTERNAL_ERROR, message)
    }
}

/// A request id exactly as the peer wrote it: a JSON string, number or `null`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Id(Box<str>);

impl Id {
    pub fn raw(&self) -> &str {
        &self.0
    }
    pub fn from_u64(n: u64) -> Self {
        Id(n.to_string().into_boxed_str())
    }
    /// An id from its raw JSON text, if that is a string, a number or null.
    pub fn from_raw(text: &str) -> Option<Id> {
        match serde_json::from_str::<Value>(text).ok()? {
            Value::String(_) | Value::Number(_) | Value::Null => Some(Id(text.trim().into())),
            _ => None,
        }
    }
}

/// What one incoming frame turned out to be.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Id,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// An answer to a request we sent (used by editor-initiated requests).
    Response {
        id: Id,
        outcome: Result<Value, RpcError>,
    },
    /// Not a valid message: answer with this error (id when one could be read, else null).
    Invalid { id: Option<Id>, error: RpcError },
}

/// The envelope, with every member kept raw so that each can be checked and reported on its own.
/// `id` uses a custom deserializer because `Option<&RawValue>` would turn `"id": null` into `None`
/// and a request with a null id would be taken for a notification.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "raw_present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

fn raw_present<'de, D>(d: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&'de RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct ErrorObject {
    code: i64,
    message: String,
}

/// Why `text` is not a request envelope: broken JSON, a batch, not an object, or a bad member.
fn not_an_envelope(text: &str, envelope_error: Option<serde_json::Error>) -> Incoming {
    let raw: &RawValue = match serde_json::from_str(text) {
        Ok(raw) => raw,
        Err(e) => {
            return Incoming::Invalid {
                id: None,
                error: RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
            }
        }
    };
    match raw.get().trim_start().as_bytes().first() {
        Some(b'{') => invalid(
            None,
            format!(
                "invalid request: {}",
                envelope_error.map(|e| e.to_string()).unwrap_or_default()
            ),
        ),
        Some(b'[') => invalid(None, "invalid request: batch requests are not supported"),
        _ => invalid(None, "invalid request: a message must be a JSON object"),
    }
}

fn invalid(id: Option<Id>, message: impl Into<String>) -> Incoming {
    Incoming::Invalid {
        id,
        error: RpcError::new(INVALID_REQUEST, message),
    }
}

/// Checks that a raw id is a string, a number or null, and keeps it.
fn read_id(raw: &RawValue) -> Option<Id> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') | Some(b'-') | Some(b'0'..=b'9') => Some(Id(text.into())),
        _ if text == "null" => Some(Id(text.into())),
        _ => None,
    }
}

/// Classifies one frame. Never panics, whatever the bytes.
pub fn parse(text: &str) -> Incoming {
    // The envelope in one pass (a frame may carry megabytes: an openDiff); only when that fails
    // is it told apart whether the JSON is broken (-32700) or well-formed but wrong (-32600).
    // (An array would deserialize into the struct field by field: objects only.)
    if text.trim_start().as_bytes().first() != Some(&b'{') {
        return not_an_envelope(text, None);
    }
    let env: Envelope = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) => return not_an_envelope(text, Some(e)),
    };
    let id = match env.id {
        None => None,
        Some(raw) => match read_id(raw) {
            Some(id) => Some(id),
            None => {
                return invalid(
                    None,
                    "invalid request: 'id' must be a string, a number or null",
                )
            }
        },
    };
    if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return invalid(id, "invalid request: 'jsonrpc' must be \"2.0\"");
    }
    let params = match env.params {
        None => None,
        Some(raw) if matches!(raw.get().as_bytes().first(), Some(b'{') | Some(b'[')) => {
            match serde_json::from_str::<Value>(raw.get()) {
                Ok(v) => Some(v),
                Err(e) => {
                    return Incoming::Invalid {
                        id,
                        error: RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
                    }
                }
            }
        }
        Some(_) => {
            return invalid(
                id,
                "invalid request: 'params' must be an object or an array",
            )
        }
    };
    if let Some(method) = env.method {
        let method: String = match serde_json::from_str(method.get()) {
            Ok(m) => m,
            Err(_) => return invalid(id, "invalid request: 'method' must be a string"),
        };
        return match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        };
    }
    // No method: it can only be a response to one of our requests.
    let Some(id) = id else {
        return invalid(None, "invalid request: 'method' is missing");
    };
    match (env.result, env.error) {
        (Some(result), None) => match serde_json::from_str::<Value>(result.get()) {
            Ok(v) => Incoming::Response { id, outcome: Ok(v) },
            Err(e) => invalid(Some(id), format!("invalid response: {e}")),
        },
        (None, Some(error)) => match serde_json::from_str::<ErrorObject>(error.get()) {
            Ok(e) => Incoming::Response {
                id,
                outcome: Err(RpcError::new(e.code, e.message)),
            },
            Err(e) => invalid(
                Some(id),
                format!("invalid response: 'error' must be {{code, message}}: {e}"),
            ),
        },
        _ => invalid(Some(id), "invalid request: 'method' is missing"),
    }
}

fn id_text(id: Option<&Id>) -> &str {
    id.map(Id::raw).unwrap_or("null")
}

pub fn result_frame(id: &Id, result: &Value) -> String {
    let body = serde_json::to_string(result).unwrap_or_else(|_| "null".into());
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#, id.raw(), body)
}

pub fn error_frame(id: Option<&Id>, error: &RpcError) -> String {
    let message = serde_json::to_string(&error.message).unwrap_or_else(|_| "\"error\"".into());
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":{}}}}}"#,
        id_text(id),
        error.code,
        message
    )
}

pub fn outcome_frame(id: &Id, outcome: &Result<Value, RpcError>) -> String {
    match outcome {
        Ok(v) => result_frame(id, v),
        Err(e) => error_frame(Some(id), e),
    }
}

pub fn notification_frame(method: &str, params: &Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

pub fn request_frame(id: &Id, method: &str, params: &Value) -> String {
    let body =
        serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
    // Insert the raw id after the opening brace.
    format!(r#"{{"id":{},{}"#, id.raw(), &body[1..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(text: &str) -> (Id, String, Option<Value>) {
        match parse(text) {
            Incoming::Request { id, method, params } => (id, method, params),
            other => panic!("expected a request, got {other:?}"),
        }
    }

    fn invalid_code(text: &str) -> (Option<Id>, i64) {
        match parse(text) {
            Incoming::Invalid { id, error } => (id, error.code),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn string_and_number_ids_are_echoed_byte_for_byte() {
        let (id, method, params) =
            request(r#"{"jsonrpc":"2.0","id":"a-b-c","method":"initialize","params":{"x":1}}"#);
        assert_eq!(id.raw(), r#""a-b-c""#);
        assert_eq!(method, "initialize");
        assert_eq!(params, Some(json!({"x": 1})));
        let (id, ..) =
            request(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}"#);
        assert_eq!(
            result_frame(&id, &json!({})),
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#
        );
        let (id, ..) = request(r#"{"jsonrpc":"2.0","id":1.50,"method":"m"}"#);
        assert_eq!(id.raw(), "1.50");
    }

    #[test]
    fn only_an_object_is_a_message_and_broken_json_is_a_parse_error() {
        // An array whose items line up with the envelope's fields is still not a message.
        assert_eq!(invalid_code(r#"["2.0", 1, "ping"]"#), (None, INVALID_REQUEST));
        assert_eq!(invalid_code(r#"  [{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).1, INVALID_REQUEST);
        assert_eq!(invalid_code("42").1, INVALID_REQUEST);
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0","id":1,"method":"ping""#).1, PARSE_ERROR);
        assert_eq!(invalid_code(r#"[1, 2"#).1, PARSE_ERROR);
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#).1, INVALID_REQUEST);
        assert_eq!(invalid_code("").1, PARSE_ERROR);
    }

    #[test]
    fn null_id_is_a_request_not_a_notification() {
        let (id, ..) = request(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
        assert_eq!(id.raw(), "null");
    }

    #[test]
    fn notification_has_no_id() {
        match parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#) {
            Incoming::Notification { method, params } => {
                assert_eq!(method, "notifications/initialized");
                assert!(params.is_none());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_json_is_a_parse_error_with_null_id() {
        for text in [
            "",
            "{",
            r#"{"jsonrpc":"2.0","id":1,"method":"x""#,
            "nul",
            "\u{0}",
            "{\"a\":}",
        ] {
            assert_eq!(invalid_code(text), (None, PARSE_ERROR), "{text:?}");
        }
    }

    #[test]
    fn wrong_shapes_are_invalid_requests() {
        assert_eq!(invalid_code("[]"), (None, INVALID_REQUEST));
        assert_eq!(
            invalid_code(r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#),
            (None, INVALID_REQUEST)
        );
        assert_eq!(invalid_code("42"), (None, INVALID_REQUEST));
        assert_eq!(invalid_code(r#""str""#), (None, INVALID_REQUEST));
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            (None, INVALID_REQUEST)
        );
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#),
            (None, INVALID_REQUEST)
        );
        let (id, code) = invalid_code(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#);
        assert_eq!((id.unwrap().raw(), code), ("7", INVALID_REQUEST));
        let (id, code) = invalid_code(r#"{"id":7,"method":"x"}"#);
        assert_eq!((id.unwrap().raw(), code), ("7", INVALID_REQUEST));
        let (id, code) = invalid_code(r#"{"jsonrpc":"2.0","id":7,"method":3}"#);
        assert_eq!((id.unwrap().raw(), code), ("7", INVALID_REQUEST));
        let (id, code) = invalid_code(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":"s"}"#);
        assert_eq!((id.unwrap().raw(), code), ("7", INVALID_REQUEST));
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"2.0"}"#),
            (None, INVALID_REQUEST)
        );
        // Duplicate members are ambiguous: refuse rather than pick one.
        assert_eq!(
            invalid_code(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#).1,
            INVALID_REQUEST
        );
    }

    #[test]
    fn responses_to_our_requests_are_recognised() {
        match parse(r#"{"jsonrpc":"2.0","id":5,"result":{"suggestions":[]}}"#) {
            Incoming::Response { id, outcome: Ok(v) } => {
                assert_eq!(id.raw(), "5");
                assert_eq!(v, json!({"suggestions": []}));
            }
            other => panic!("{other:?}"),
        }
        match parse(r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32800,"message":"cancelled"}}"#) {
            Incoming::Response {
                outcome: Err(e), ..
            } => assert_eq!(e.code, -32800),
            other => panic!("{other:?}"),
        }
        match parse(r#"{"jsonrpc":"2.0","id":5,"result":null}"#) {
            Incoming::Response {
                outcome: Ok(Value::Null),
                ..
            } => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frames_are_valid_json() {
        let id = Id::from_u64(3);
        let e: Value = serde_json::from_str(&error_frame(
            Some(&id),
            &RpcError::new(-32601, "no \"such\" method"),
        ))
        .unwrap();
        assert_eq!(
            e,
            json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no \"such\" method"}})
        );
        let e: Value =
            serde_json::from_str(&error_frame(None, &RpcError::new(-32700, "x"))).unwrap();
        assert_eq!(e["id"], Value::Null);
        let r: Value =
            serde_json::from_str(&request_frame(&id, "getSuggestions", &json!({"a":1}))).unwrap();
        assert_eq!(
            r,
            json!({"jsonrpc":"2.0","id":3,"method":"getSuggestions","params":{"a":1}})
        );
        let n: Value =
            serde_json::from_str(&notification_frame("selection_changed", &json!({}))).unwrap();
        assert_eq!(n["method"], "selection_changed");
        assert!(n.get("id").is_none());
    }
}
