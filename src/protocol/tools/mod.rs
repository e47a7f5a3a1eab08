//! What a tool entry is, and the pi-ide tools (pi_ide.rs: what the agents of pi-ide's wire
//! format call). An agent with tools of its own keeps their entries in its module (src/agents/).
//! An entry says everything about its tool: name, JSON Schema, argument checks, how Lua's
//! answer is shaped into an MCP tool result, what is answered if a call is abandoned or Neovim
//! is held up, and the name of the Lua handler that answers it (Lua maps the name to its
//! module: lua/pi-ide/features/tools/init.lua). A tool of another agent shares its handler with
//! the pi-ide tool of the same meaning and differs only in its schema and answer shape
//! (`adapt`, `reshape`). Following one name finds all of a tool.
//!
//! Every tool is answered by Lua or by the core itself (its hook); Rust validates the
//! arguments first so that Lua only ever sees well-typed input.

pub mod pi_ide;

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::protocol::jsonrpc::RpcError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    String,
    Integer,
    Boolean,
}

impl Ty {
    fn schema_name(self) -> &'static str {
        match self {
            Ty::String => "string",
            Ty::Integer => "integer",
            Ty::Boolean => "boolean",
        }
    }
    fn accepts(self, v: &Value) -> bool {
        match self {
            Ty::String => v.is_string(),
            // Integers may arrive as 3.0 from JavaScript; accept any whole number.
            Ty::Integer => {
                v.as_i64().is_some()
                    || v.as_f64()
                        .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            }
            Ty::Boolean => v.is_boolean(),
        }
    }
}

#[derive(Debug)]
pub struct Param {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub description: &'static str,
}

/// How Lua's answer becomes the `result` of `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Lua returns any value; it is sent as one text item holding its JSON. A string is taken as
    /// JSON Lua encoded itself.
    JsonText,
    /// Lua returns a string or a list of strings; each becomes one text item.
    Texts,
}

/// For tools the agent waits on without a timeout: if Neovim's main loop cannot answer in time
/// (a hit-enter prompt, a blocking `input()`, a long `:!command` or a slow plugin keep it from
/// running scheduled work), Rust answers instead, from the last answer Lua gave.
#[derive(Debug)]
pub struct Fallback {
    /// How long Lua has.
    pub after: Duration,
    /// Whether Lua's answer to these arguments is worth keeping for a later fallback.
    pub keep: fn(&Value) -> bool,
    /// The fallback answer for these arguments, from what was kept (if anything).
    pub answer: fn(&Value, Option<&Value>) -> Value,
}

/// What the core does with a call of the tool before, or instead of, handing it to Lua. Each
/// variant is carried out in one place (mcp/dispatch.rs names them); no transport and no other
/// part of the core looks at a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Parked for Lua.
    Lua,
    /// Answered from the diagnostics snapshot while it is current (state/diagnostics.rs); else
    /// Lua. Its fallback answers from the snapshot too.
    Snapshot,
    /// A review (state/reviews/): staged, shown by Lua, answered when the user decides;
    /// accepted at once, unseen, when the user turned reviews off. Any failure answers it as a
    /// rejection: an error would let the agent write unreviewed.
    Review(&'static ReviewArgs),
    /// Closes the caller's review named by this argument (rejecting it if undecided): answered
    /// by the core with `["TAB_CLOSED", "closed" | "already_closed", name]`, shaped.
    CloseReview { tab: &'static str },
    /// As CloseReview, answered with the text the user left in the review (the agent writes
    /// that, not its proposal, when the user answered it elsewhere): by the core at once, from
    /// what Lua pushed at the user's last change (state/reviews/left.rs); null when nothing was
    /// decided or there is no such review. Only while the user is typing in it does Lua read it.
    CloseReviewKeepingText { tab: &'static str },
    /// Closes every review of the caller: answered by the core with `CLOSED_<n>_DIFF_TABS`.
    CloseAllReviews,
    /// Answered by the core at once: the client's session name is recorded (state/clients.rs)
    /// and Lua is told (status line, winbar).
    SessionName,
}

/// The arguments of a review tool, by name: no other code reads them as literals.
#[derive(Debug, PartialEq, Eq)]
pub struct ReviewArgs {
    /// The review's name among the caller's (its close names it).
    pub tab: &'static str,
    /// The file that will be written: shown, and diffed against.
    pub path: &'static str,
    /// The file as it is now, when the agent may name another one.
    pub old_path: Option<&'static str>,
    /// The proposed contents.
    pub contents: &'static str,
    /// Who writes the file after an accept, and how the user's text gets there.
    pub writes: Writes,
    /// The answer says what ended the review (the agent closed it: `closed_via_tool`).
    pub reports_trigger: bool,
}

/// Who writes an accepted review's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// The text accepted is what is written: the agent writes what FILE_SAVED carries.
    Accepted,
    /// The text accepted is what is written, by the chat that asked; the agent, which learns
    /// only that its write succeeded, is told at its next prompt what the user did not keep.
    AcceptedByChat,
    /// The agent writes its own proposal; the chat that asked sets the file to the text
    /// accepted once the agent's call is done (chat/acp/).
    ProposalThenChat,
    /// The agent writes its own proposal, and nothing says when: the core watches the file and
    /// sets it to the text accepted (state/reviews/own_write.rs). `model_told`: whether the
    /// agent's model reads the answer's message, which tells what the user did not keep.
    ProposalWatched { model_told: bool },
}

impl Writes {
    /// The agent writes its own proposal (not the text accepted).
    pub fn its_proposal(self) -> bool {
        !matches!(self, Writes::Accepted | Writes::AcceptedByChat)
    }

    /// The answer carries the note on the hunks not kept (its agent is told some other way
    /// than by the text FILE_SAVED carries).
    fn notes(self) -> bool {
        self != Writes::Accepted
    }
}

/// How a review ended, for its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The user accepted this text (theirs, edited or not), and what the agent is told of the
    /// hunks they did not keep as proposed, when the answer does not show it (else None).
    Accepted(String, Option<String>),
    Rejected,
    /// Its agent closed it (close_tab, close_diff, closeAllDiffTabs, a second review of the
    /// same name).
    Closed,
}

#[derive(Debug)]
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [Param],
    pub shape: Shape,
    pub fallback: Option<Fallback>,
    pub hook: Hook,
    /// The Lua handler, when it is another tool's (an agent's own tools share pi-ide's); else
    /// the one named after the tool. Lua finds its module by that name
    /// (lua/pi-ide/features/tools/init.lua); everything else about the tool is this entry.
    pub handler: Option<&'static str>,
    /// Turns the (validated) arguments into the handler's.
    pub adapt: Option<fn(Value) -> Value>,
    /// Turns the handler's answer into this tool's, before `shape`; gets the abandon context
    /// (open_diff: the tab_name).
    pub reshape: Option<fn(Value, Option<&str>) -> Value>,
    /// Listed and callable only when the user turned it on (the session says which).
    pub opt_in: bool,
    /// Listed with `readOnlyHint: true`: the tool itself changes nothing on disk (a client
    /// that never asks, such as `codex exec`, calls only those).
    pub read_only: bool,
    /// Answered at once with no content; its real answer, which its reshape makes
    /// `{method, params}`, goes later on the event stream as that notification.
    pub answered_later: bool,
    /// A close (Hook::CloseReview, or KeepingText) that, when this boolean argument is true, is told to nobody:
    /// the decision of the call answered later for that review is not sent.
    pub quiet_when: Option<&'static str>,
}

/// What a tool is unless its entry says otherwise: no parameters, answered as JSON text, an
/// error if abandoned, no fallback, answered by the Lua handler named after it.
pub(crate) const PLAIN: Tool = Tool {
    name: "",
    description: "",
    params: &[],
    shape: Shape::JsonText,
    fallback: None,
    hook: Hook::Lua,
    handler: None,
    adapt: None,
    reshape: None,
    opt_in: false,
    read_only: false,
    answered_later: false,
    quiet_when: None,
};

/// The path of a `file://` URI (percent-decoded), or the argument itself when it is a path.
pub(crate) fn uri_path(uri: &str) -> String {
    let Some(rest) = uri.strip_prefix("file://") else {
        return uri.to_owned();
    };
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Tool {
    pub fn input_schema(&self) -> Value {
        let mut props = Map::new();
        for p in self.params {
            props.insert(
                p.name.into(),
                json!({"type": p.ty.schema_name(), "description": p.description}),
            );
        }
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name)
            .collect();
        json!({"type": "object", "properties": props, "required": required})
    }

    pub fn describe(&self) -> Value {
        let mut out = json!({"name": self.name, "description": self.description, "inputSchema": self.input_schema()});
        if self.read_only {
            out["annotations"] = json!({"readOnlyHint": true});
        }
        out
    }

    /// Checks `arguments` against the schema. Unknown members are allowed (clients add their own);
    /// a missing or ill-typed known one is -32602 naming it.
    pub fn validate(&self, args: &Value) -> Result<(), RpcError> {
        let Some(obj) = args.as_object() else {
            return Err(RpcError::invalid_params(format!(
                "'arguments' of {} must be an object",
                self.name
            )));
        };
        for p in self.params {
            match obj.get(p.name) {
                None | Some(Value::Null) if p.required => {
                    return Err(RpcError::invalid_params(format!(
                        "{}: missing required argument '{}'",
                        self.name, p.name
                    )))
                }
                None | Some(Value::Null) => {}
                Some(v) if !p.ty.accepts(v) => {
                    return Err(RpcError::invalid_params(format!(
                        "{}: argument '{}' must be {} {}",
                        self.name,
                        p.name,
                        if p.ty == Ty::Integer { "an" } else { "a" },
                        p.ty.schema_name()
                    )))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Whether Lua answers it (always, or when the core cannot), by [`Tool::handler_name`].
    pub fn answered_by_lua(&self) -> bool {
        matches!(self.hook, Hook::Lua | Hook::Snapshot | Hook::CloseReviewKeepingText { .. })
    }

    /// The name of the Lua handler that answers it.
    pub fn handler_name(&self) -> &'static str {
        self.handler.unwrap_or(self.name)
    }

    /// The handler's answer as this tool's MCP result (`context`: see [`Tool::reshape`]).
    pub fn finish(&self, value: Value, context: Option<&str>) -> Result<Value, RpcError> {
        match self.reshape {
            Some(reshape) => self.shape_result(reshape(value, context)),
            None => self.shape_result(value),
        }
    }

    /// Turns Lua's answer into an MCP tool result.
    pub fn shape_result(&self, value: Value) -> Result<Value, RpcError> {
        let texts: Vec<String> =
            match self.shape {
                // A string is JSON Lua already encoded (it alone can tell `[]` from `{}`).
                Shape::JsonText => match value {
                    Value::String(s) => vec![s],
                    other => vec![serde_json::to_string(&other)
                        .map_err(|e| RpcError::internal(e.to_string()))?],
                },
                Shape::Texts => match value {
                    Value::String(s) => vec![s],
                    Value::Array(items) => items
                        .into_iter()
                        .map(|v| match v {
                            Value::String(s) => Ok(s),
                            other => Err(RpcError::internal(format!(
                                "{}: editor answered a non-text item: {other}",
                                self.name
                            ))),
                        })
                        .collect::<Result<_, _>>()?,
                    other => {
                        return Err(RpcError::internal(format!(
                            "{}: editor answered {other}",
                            self.name
                        )))
                    }
                },
            };
        let content: Vec<Value> = texts
            .into_iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        Ok(json!({ "content": content }))
    }

    /// Its review arguments, when it is a review.
    pub fn review(&self) -> Option<&'static ReviewArgs> {
        match self.hook {
            Hook::Review(args) => Some(args),
            _ => None,
        }
    }

    /// The answer owed to a call that will never be answered by Lua (the editor is stopping).
    /// `context` is what was kept of the arguments for this (a review: its name).
    pub fn abandoned(&self, context: Option<&str>) -> Result<Value, RpcError> {
        match self.review() {
            None => Err(RpcError::internal(format!(
                "{}: the editor stopped before answering",
                self.name
            ))),
            Some(r) => self.finish(r.answer(&Verdict::Rejected, context.unwrap_or_default()), context),
        }
    }

    /// The answer actually sent for `outcome`. A review, whose failures must read as a
    /// rejection (the Pi extension writes unreviewed on any error, so no failure of any kind,
    /// in Lua or in Rust, may reach it as a JSON-RPC error), gets that rejection instead of an
    /// error; other tools' outcomes pass through.
    pub fn owed(&self, outcome: Result<Value, RpcError>, context: Option<&str>) -> Result<Value, RpcError> {
        match (self.review(), outcome) {
            (Some(_), Err(e)) => {
                crate::warn!(
                    "{}: {} (answered as a rejection: an error would let the write through unreviewed)",
                    self.name,
                    e.message
                );
                self.abandoned(context)
            }
            (_, outcome) => outcome,
        }
    }

    /// What to keep of the arguments for [`Tool::abandoned`]: a review's name.
    pub fn abandon_context(&self, args: &Value) -> Option<String> {
        let review = self.review()?;
        args.get(review.tab).and_then(Value::as_str).map(str::to_owned)
    }
}

impl ReviewArgs {
    /// The answer for `verdict` before its tool shapes it: `["FILE_SAVED", text]` (and the
    /// note on the hunks not kept, for an agent that learns of them only so) or
    /// `["DIFF_REJECTED", name]`, with what ended it when the tool reports that.
    pub fn answer(&self, verdict: &Verdict, tab: &str) -> Value {
        match verdict {
            Verdict::Accepted(text, Some(note)) if self.writes.notes() => json!(["FILE_SAVED", text, note]),
            Verdict::Accepted(text, _) => json!(["FILE_SAVED", text]),
            Verdict::Closed if self.reports_trigger => json!(["DIFF_REJECTED", tab, "closed_via_tool"]),
            Verdict::Rejected | Verdict::Closed => json!(["DIFF_REJECTED", tab]),
        }
    }

    /// A string argument of a call of this tool, by its name here.
    pub fn get<'a>(&self, args: &'a Value, name: &str) -> &'a str {
        args.get(name).and_then(Value::as_str).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::INVALID_PARAMS;

    #[test]
    fn every_tool_has_an_object_schema_naming_its_params() {
        for t in pi_ide::TOOLS {
            let s = t.input_schema();
            assert_eq!(s["type"], "object");
            for p in t.params {
                assert_eq!(
                    s["properties"][p.name]["type"],
                    p.ty.schema_name(),
                    "{}.{}",
                    t.name,
                    p.name
                );
            }
        }
    }

    #[test]
    fn validation_names_the_parameter() {
        let t = pi_ide::TOOLS.iter().find(|t| t.name == "getDiagnostics").unwrap();
        assert!(t.validate(&json!({})).is_ok());
        assert!(t.validate(&json!({"uri": "file:///x", "extra": 1})).is_ok());
        let e = t.validate(&json!({"uri": 5})).unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS);
        assert!(e.message.contains("'uri'"), "{}", e.message);
        assert!(e.message.contains("string"), "{}", e.message);
        let e = t.validate(&json!([1])).unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS);
    }

    #[test]
    fn required_and_integer_checks() {
        static T: Tool = Tool {
            name: "t",
                    description: "",
            params: &[
                Param {
                    name: "path",
                    ty: Ty::String,
                    required: true,
                    description: "",
                },
                Param {
                    name: "line",
                    ty: Ty::Integer,
                    required: false,
                    description: "",
                },
            ],
            shape: Shape::Texts,
            fallback: None,
            hook: Hook::Lua,
            ..PLAIN
        };
        assert!(T
            .validate(&json!({}))
            .unwrap_err()
            .message
            .contains("missing required argument 'path'"));
        assert!(T.validate(&json!({"path": "a", "line": 3})).is_ok());
        assert!(T.validate(&json!({"path": "a", "line": 3.0})).is_ok());
        assert!(T
            .validate(&json!({"path": "a", "line": 3.5}))
            .unwrap_err()
            .message
            .contains("'line' must be an integer"));
        assert!(T.validate(&json!({"path": "a", "line": "3"})).is_err());
    }

    #[test]
    fn shapes() {
        let t = pi_ide::TOOLS.iter().find(|t| t.name == "getDiagnostics").unwrap();
        let r = t.shape_result(json!({})).unwrap();
        assert_eq!(r, json!({"content": [{"type": "text", "text": "{}"}]}));
        static T: Tool = Tool {
            name: "t",
                    description: "",
            params: &[],
            shape: Shape::Texts,
            fallback: None,
            hook: Hook::Lua,
            ..PLAIN
        };
        assert_eq!(
            T.shape_result(json!(["FILE_SAVED", "body\n"])).unwrap(),
            json!({"content": [{"type": "text", "text": "FILE_SAVED"}, {"type": "text", "text": "body\n"}]})
        );
        assert_eq!(
            T.shape_result(json!("TAB_CLOSED")).unwrap()["content"][0]["text"],
            "TAB_CLOSED"
        );
        assert!(T.shape_result(json!([1])).is_err());
        assert!(T.shape_result(json!(null)).is_err());
    }
}
