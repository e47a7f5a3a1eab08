//! The pi-ide tools (the agents of pi-ide's wire format call them), one entry each: see mod.rs for what an
//! entry says.

use std::time::Duration;

use serde_json::{json, Value};

use super::{uri_path, Fallback, Hook, Param, ReviewArgs, Shape, Tool, Ty, Writes, PLAIN};

/// getDiagnostics' answer while Neovim is held up (get_diagnostics shares it).
pub(crate) const DIAGNOSTICS_FALLBACK: Fallback = Fallback {
    after: Duration::from_millis(500),
    keep: |args| args.get("uri").and_then(Value::as_str).is_none_or(str::is_empty),
    answer: diagnostics_fallback,
};

/// openFile's selection (the MCP clients' openFile takes the same).
pub(crate) const START_LINE: Param = Param { name: "startLine", ty: Ty::Integer, required: false, description: "First line to select, 1-based." };
pub(crate) const END_LINE: Param = Param { name: "endLine", ty: Ty::Integer, required: false, description: "Last line to select, 1-based." };
pub(crate) const START_TEXT: Param = Param { name: "startText", ty: Ty::String, required: false, description: "Select from the first occurrence of this text." };
pub(crate) const END_TEXT: Param = Param { name: "endText", ty: Ty::String, required: false, description: "...to the end of the next occurrence of this text." };

/// getDiagnostics' one parameter (the tools of other agents that share its handler take it too).
pub(crate) const DIAGNOSTICS_URI: Param = Param {
    name: "uri",
    ty: Ty::String,
    required: false,
    description: "A file URI (file:///...) or absolute path; omit for every open file.",
};

pub static TOOLS: &[Tool] = &[
Tool {
    name: "getDiagnostics",
    description: "Diagnostics (errors, warnings, hints) Neovim has for open files, keyed by file URI. \
                  With `uri`, only that file's.",
    params: &[DIAGNOSTICS_URI],
    fallback: Some(DIAGNOSTICS_FALLBACK),
    hook: Hook::Snapshot,
    ..PLAIN
},
Tool {
    name: "getOpenEditorTabs",
    description: "Listed file buffers as a JSON array of {uri, isActive, isDirty, languageId}.",
    ..PLAIN
},
Tool {
    name: "getOpenEditors",
    description: "Open file buffers as {tabs: [{uri, isActive, isDirty, label, languageId, fileName, lineCount, ...}]}.",
    ..PLAIN
},
Tool {
    name: "getWorkspaceFolders",
    description: "The workspace folders (Neovim's current directory and LSP workspace folders) as \
                  {success, folders: [{name, uri, path}], rootPath}.",
    ..PLAIN
},
Tool {
    name: "getCurrentSelection",
    description: "The selection or cursor in the current file now: {success, text, filePath, fileUrl, selection}. \
                  Lines are zero-based, characters in UTF-16 code units.",
    ..PLAIN
},
Tool {
    name: "getLatestSelection",
    description: "The last selection_changed state sent: {text, filePath, fileUrl, selection}, or \
                  {success: false, message} when there is none.",
    ..PLAIN
},
Tool {
    name: "openFile",
    description: "Open a file in Neovim, optionally selecting lines (1-based startLine/endLine) or text.",
    params: &[
        Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path (or relative to Neovim's directory)." },
        Param { name: "preview", ty: Ty::Boolean, required: false, description: "Open in the preview window." },
        START_LINE,
        END_LINE,
        START_TEXT,
        END_TEXT,
        Param { name: "selectToEndOfLine", ty: Ty::Boolean, required: false, description: "Extend the selection to the end of its last line." },
        Param { name: "makeFrontmost", ty: Ty::Boolean, required: false, description: "Show and focus it (default true); false only loads it, leaving every window as it is." },
    ],
    shape: Shape::Texts,
    ..PLAIN
},
Tool {
    name: "checkDocumentDirty",
    description: "Whether the open buffer of a file has unsaved changes: {success, filePath, isDirty, isUntitled}.",
    params: &[Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." }],
    ..PLAIN
},
Tool {
    name: "openDiff",
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
    hook: Hook::Review(&OPEN_DIFF),
    ..PLAIN
},
Tool {
    name: "close_tab",
    description: "Close the review with this tab_name if it is open (rejecting it if undecided). TAB_CLOSED.",
    params: &[Param { name: "tab_name", ty: Ty::String, required: true, description: "The openDiff tab_name." }],
    shape: Shape::Texts,
    hook: Hook::CloseReview { tab: "tab_name" },
    reshape: Some(tab_closed),
    ..PLAIN
},
Tool {
    name: "closeAllDiffTabs",
    hook: Hook::CloseAllReviews,
    description: "Close every review this client opened (never another agent's, never the user's own diffs): CLOSED_<n>_DIFF_TABS.",
    shape: Shape::Texts,
    ..PLAIN
},
Tool {
    name: "saveDocument",
    description: "Write the open buffer of a file to disk: {success, filePath, saved, message}.",
    params: &[Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." }],
    ..PLAIN
},
];

/// openDiff's arguments.
static OPEN_DIFF: ReviewArgs = ReviewArgs {
    tab: "tab_name",
    path: "new_file_path",
    old_path: Some("old_file_path"),
    contents: "new_file_contents",
    writes: Writes::Accepted,
    reports_trigger: false,
};

/// close_tab answers TAB_CLOSED, whether or not a review was open.
pub(crate) fn tab_closed(_: Value, _: Option<&str>) -> Value {
    json!("TAB_CLOSED")
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
        let keep = TOOLS.iter().find(|t| t.name == "getDiagnostics")
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


}
