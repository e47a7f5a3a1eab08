//! The tools we serve over `tools/call`, one entry each in [`TOOLS`]: name, JSON Schema,
//! argument checks, how Lua's answer is shaped into an MCP tool result (and Claude Code's shape
//! where it differs), what is answered if a call is abandoned or Neovim is held up, and the Lua
//! module whose function of the same name answers it. Following one name finds all of a tool.
//!
//! Every tool here is answered by Lua (it needs Neovim); Rust validates the arguments first so
//! that Lua only ever sees well-typed input.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::jsonrpc::RpcError;

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

/// What a parked call is answered with when the editor stops before Lua answered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnAbandon {
    /// A JSON-RPC internal error: fine for read-only tools.
    Error,
    /// DIFF_REJECTED with the call's tab_name: the Pi extension fails open, so an error would
    /// let the agent write the file unreviewed.
    Reject,
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
/// variant is carried out in one place (dispatch.rs names them); no transport and no other
/// part of the core looks at a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Parked for Lua.
    Lua,
    /// Answered from the diagnostics snapshot while it is current (diagnostics.rs); else Lua.
    /// Its fallback answers from the snapshot too.
    Snapshot,
    /// A review (review.rs): at most a few pending per client, staged on a worker, parked for
    /// Lua; accepted at once, unseen, when the user turned reviews off.
    Review,
}

#[derive(Debug)]
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [Param],
    pub shape: Shape,
    pub on_abandon: OnAbandon,
    pub fallback: Option<Fallback>,
    /// Claude Code's shape of the answer, where it differs from ours (getDiagnostics).
    pub claude_code: Option<fn(&Value) -> String>,
    pub hook: Hook,
    /// The Lua module that answers it: `require(lua)[name](args, reply, event)` (see
    /// lua/pi-ide/tools/init.lua). Everything else about the tool is this entry.
    pub lua: &'static str,
}

/// What a tool is unless its entry says otherwise: no parameters, answered as JSON text, an
/// error if abandoned, no fallback, the same shape for every client.
const PLAIN: Tool = Tool {
    name: "",
    lua: "",
    description: "",
    params: &[],
    shape: Shape::JsonText,
    on_abandon: OnAbandon::Error,
    fallback: None,
    claude_code: None,
    hook: Hook::Lua,
};

pub static TOOLS: &[Tool] = &[
Tool {
    name: "getDiagnostics",
    lua: "pi-ide.tools.diagnostics",
    claude_code: Some(diagnostics_as_claude),
    description: "Diagnostics (errors, warnings, hints) Neovim has for open files, keyed by file URI. \
                  With `uri`, only that file's.",
    params: &[Param {
        name: "uri",
        ty: Ty::String,
        required: false,
        description: "A file URI (file:///...) or absolute path; omit for every open file.",
    }],
    fallback: Some(Fallback {
        after: Duration::from_millis(500),
        keep: |args| args.get("uri").and_then(Value::as_str).is_none_or(str::is_empty),
        answer: diagnostics_fallback,
    }),
    hook: Hook::Snapshot,
    ..PLAIN
},
Tool {
    name: "getOpenEditorTabs",
    lua: "pi-ide.tools.editors",
    description: "Listed file buffers as a JSON array of {uri, isActive, isDirty, languageId}.",
    ..PLAIN
},
Tool {
    name: "getOpenEditors",
    lua: "pi-ide.tools.editors",
    description: "Open file buffers as {tabs: [{uri, isActive, isDirty, label, languageId, fileName, lineCount, ...}]}.",
    ..PLAIN
},
Tool {
    name: "getWorkspaceFolders",
    lua: "pi-ide.tools.editors",
    description: "The workspace folders (Neovim's current directory and LSP workspace folders) as \
                  {success, folders: [{name, uri, path}], rootPath}.",
    ..PLAIN
},
Tool {
    name: "getCurrentSelection",
    lua: "pi-ide.tools.selection",
    description: "The selection or cursor in the current file now: {success, text, filePath, fileUrl, selection}. \
                  Lines are zero-based, characters in UTF-16 code units.",
    ..PLAIN
},
Tool {
    name: "getLatestSelection",
    lua: "pi-ide.tools.selection",
    description: "The last selection_changed state sent: {text, filePath, fileUrl, selection}, or \
                  {success: false, message} when there is none.",
    ..PLAIN
},
Tool {
    name: "openFile",
    lua: "pi-ide.tools.open_file",
    description: "Open a file in Neovim, optionally selecting lines (1-based startLine/endLine) or text.",
    params: &[
        Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path (or relative to Neovim's directory)." },
        Param { name: "preview", ty: Ty::Boolean, required: false, description: "Open in the preview window." },
        Param { name: "startLine", ty: Ty::Integer, required: false, description: "First line to select, 1-based." },
        Param { name: "endLine", ty: Ty::Integer, required: false, description: "Last line to select, 1-based." },
        Param { name: "startText", ty: Ty::String, required: false, description: "Select from the first occurrence of this text." },
        Param { name: "endText", ty: Ty::String, required: false, description: "...to the end of the next occurrence of this text." },
        Param { name: "selectToEndOfLine", ty: Ty::Boolean, required: false, description: "Extend the selection to the end of its last line." },
        Param { name: "makeFrontmost", ty: Ty::Boolean, required: false, description: "Show and focus it (default true); false only loads it, leaving every window as it is." },
    ],
    shape: Shape::Texts,
    ..PLAIN
},
Tool {
    name: "checkDocumentDirty",
    lua: "pi-ide.tools.documents",
    description: "Whether the open buffer of a file has unsaved changes: {success, filePath, isDirty, isUntitled}.",
    params: &[Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." }],
    ..PLAIN
},
Tool {
    name: "openDiff",
    lua: "pi-ide.tools.reviews",
    description: "Show the user a two-pane diff of a file against proposed contents and wait for their \
                  decision: FILE_SAVED with the final contents (they may have edited them) or \
                  DIFF_REJECTED with the tab_name. The editor never writes the file itself.",
    params: &[
        Param { name: "old_file_path", ty: Ty::String, required: true, description: "The file as it is now (it may not exist yet)." },
        Param { name: "new_file_path", ty: Ty::String, required: true, description: "Where the contents will be written." },
        Param { name: "new_file_contents", ty: Ty::String, required: true, description: "The proposed contents." },
        Param { name: "tab_name", ty: Ty::String, required: true, description: "An id for this review (close_tab uses it)." },
    ],
    shape: Shape::Texts,
    on_abandon: OnAbandon::Reject,
    hook: Hook::Review,
    ..PLAIN
},
Tool {
    name: "close_tab",
    lua: "pi-ide.tools.reviews",
    description: "Close the review with this tab_name if it is open (rejecting it if undecided). TAB_CLOSED.",
    params: &[Param { name: "tab_name", ty: Ty::String, required: true, description: "The openDiff tab_name." }],
    shape: Shape::Texts,
    ..PLAIN
},
Tool {
    name: "closeAllDiffTabs",
    lua: "pi-ide.tools.reviews",
    description: "Close every review this client opened (never another agent's, never the user's own diffs): CLOSED_<n>_DIFF_TABS.",
    shape: Shape::Texts,
    ..PLAIN
},
Tool {
    name: "saveDocument",
    lua: "pi-ide.tools.documents",
    description: "Write the open buffer of a file to disk: {success, filePath, saved, message}.",
    params: &[Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." }],
    ..PLAIN
},
];

/// The last full diagnostics answer, narrowed to `uri` when one was asked for.
fn diagnostics_fallback(args: &Value, last: Option<&Value>) -> Value {
    let Some(Value::Object(all)) = last else {
        return json!({});
    };
    match args
        .get("uri")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        None => Value::Object(all.clone()),
        Some(uri) => {
            let want = uri_path(uri);
            Value::Object(
                all.iter()
                    .filter(|(k, _)| uri_path(k) == want)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        }
    }
}

/// Diagnostics in Claude Code's shape: `[{"uri", "diagnostics": [...]}]`, files without any
/// left out. The input is what Lua answers: the pi-ide object (or its JSON text).
pub fn diagnostics_as_claude(value: &Value) -> String {
    let parsed;
    let object = match value {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
            &parsed
        }
        other => other,
    };
    let files: Vec<Value> = object
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, d)| d.as_array().is_some_and(|a| !a.is_empty()))
                .map(|(uri, d)| json!({"uri": uri, "diagnostics": d}))
                .collect()
        })
        .unwrap_or_default();
    Value::Array(files).to_string()
}

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

pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
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
        json!({"name": self.name, "description": self.description, "inputSchema": self.input_schema()})
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

    /// [`Tool::shape_result`] in the dialect of the client that called: Claude Code parses
    /// getDiagnostics as an array of `{uri, diagnostics}` (empty: `[]`), Pi as an object
    /// keyed by uri.
    pub fn shape_result_for(
        &self,
        value: Value,
        flavor: crate::clients::Flavor,
    ) -> Result<Value, RpcError> {
        if let (Some(reshape), crate::clients::Flavor::ClaudeCode) = (self.claude_code, flavor) {
            return self.shape_result(Value::String(reshape(&value)));
        }
        self.shape_result(value)
    }

    /// The answer owed to a call that will never be answered by Lua (the editor is stopping).
    /// `context` is what was kept of the arguments for this (openDiff: the tab_name).
    pub fn abandoned(&self, context: Option<&str>) -> Result<Value, RpcError> {
        match self.on_abandon {
            OnAbandon::Error => Err(RpcError::internal(format!(
                "{}: the editor stopped before answering",
                self.name
            ))),
            OnAbandon::Reject => {
                self.shape_result(json!(["DIFF_REJECTED", context.unwrap_or_default()]))
            }
        }
    }

    /// The answer actually sent for `outcome`. A tool whose failures must read as a rejection
    /// (openDiff: the Pi extension writes unreviewed on any error, so no failure of any kind,
    /// in Lua or in Rust, may reach it as a JSON-RPC error) gets that rejection instead of an
    /// error; other tools' outcomes pass through.
    pub fn owed(&self, outcome: Result<Value, RpcError>, context: Option<&str>) -> Result<Value, RpcError> {
        match (self.on_abandon, outcome) {
            (OnAbandon::Reject, Err(e)) => {
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

    /// What to keep of the arguments for [`Tool::abandoned`].
    pub fn abandon_context(&self, args: &Value) -> Option<String> {
        match self.on_abandon {
            OnAbandon::Reject => args
                .get("tab_name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            OnAbandon::Error => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::INVALID_PARAMS;

    #[test]
    fn every_tool_has_an_object_schema_naming_its_params() {
        for t in TOOLS {
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
        let t = find("getDiagnostics").unwrap();
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
            lua: "t",
            claude_code: None,
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
            on_abandon: OnAbandon::Error,
            fallback: None,
            hook: Hook::Lua,
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
    fn diagnostics_fallback_narrows_the_last_answer() {
        let last = json!({"file:///a%20b.rs": [1], "file:///c.rs": [2]});
        assert_eq!(diagnostics_fallback(&json!({}), None), json!({}));
        assert_eq!(diagnostics_fallback(&json!({}), Some(&last)), last);
        assert_eq!(
            diagnostics_fallback(&json!({"uri": "file:///c.rs"}), Some(&last)),
            json!({"file:///c.rs": [2]})
        );
        assert_eq!(
            diagnostics_fallback(&json!({"uri": "/a b.rs"}), Some(&last)),
            json!({"file:///a%20b.rs": [1]})
        );
        assert_eq!(
            diagnostics_fallback(&json!({"uri": "/zzz"}), Some(&last)),
            json!({})
        );
        let keep = find("getDiagnostics")
            .unwrap()
            .fallback
            .as_ref()
            .unwrap()
            .keep;
        assert!(
            keep(&json!({})) && keep(&json!({"uri": ""})) && !keep(&json!({"uri": "file:///c.rs"}))
        );
        assert_eq!(uri_path("file:///x%2"), "/x%2");
    }

    #[test]
    fn claude_codes_diagnostics_shape_is_an_array_of_uri_and_diagnostics() {
        let pi = json!({"file:///a": [{"message": "m"}], "file:///empty": []});
        let claude: Value = serde_json::from_str(&diagnostics_as_claude(&pi)).unwrap();
        assert_eq!(claude, json!([{"uri": "file:///a", "diagnostics": [{"message": "m"}]}]));
        // Lua answers JSON text; nothing is "[]".
        assert_eq!(diagnostics_as_claude(&json!("{}")), "[]");
        let t = find("getDiagnostics").unwrap();
        let r = t
            .shape_result_for(json!("{}"), crate::clients::Flavor::ClaudeCode)
            .unwrap();
        assert_eq!(r["content"][0]["text"], "[]");
        let r = t.shape_result_for(json!("{}"), crate::clients::Flavor::Pi).unwrap();
        assert_eq!(r["content"][0]["text"], "{}");
    }

    #[test]
    fn shapes() {
        let t = find("getDiagnostics").unwrap();
        let r = t.shape_result(json!({})).unwrap();
        assert_eq!(r, json!({"content": [{"type": "text", "text": "{}"}]}));
        static T: Tool = Tool {
            name: "t",
            lua: "t",
            claude_code: None,
            description: "",
            params: &[],
            shape: Shape::Texts,
            on_abandon: OnAbandon::Error,
            fallback: None,
            hook: Hook::Lua,
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
