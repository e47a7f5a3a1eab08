//! The tools an MCP client's model sees, one entry each, described for a model that knows
//! nothing of Neovim. Each shares its Lua handler and hook with the pi-ide tool of the same
//! name (protocol/tools/pi_ide.rs). No tool runs Lua, Ex commands or a shell; saving and taking
//! back a review are off unless the user turns them on (`opt_in`). Every tool but saveDocument
//! is read-only (`readOnlyHint`): it changes nothing on disk. openDiff too: the review never
//! writes the file, the client does after FILE_SAVED, under its own approval and sandbox.
//! bridge/tools.json is this
//! list as `tools/list` answers it by default (the bridge answers it when it cannot reach a
//! Neovim); a test keeps the two the same.

use crate::protocol::tools::{Hook, Param, ReviewArgs, Shape, Tool, Ty, Writes, PLAIN};

pub static TOOLS: &[Tool] = &[
Tool {
    name: "getDiagnostics",
    description: "Errors, warnings and hints that the user's editor (Neovim, with its language servers) \
                  shows for the files it has open, as a JSON object keyed by file URI. Call it after \
                  changing code to see what the editor reports. With `uri`, only that file's.",
    params: &[crate::protocol::tools::pi_ide::DIAGNOSTICS_URI],
    fallback: Some(crate::protocol::tools::pi_ide::DIAGNOSTICS_FALLBACK),
    hook: Hook::Snapshot,
    read_only: true,
    ..PLAIN
},
Tool {
    name: "getCurrentSelection",
    description: "What the user is looking at in their editor right now: the file, and the selected text \
                  or the cursor position, as {success, text, filePath, fileUrl, selection}. Lines are \
                  zero-based. Use it when the user says \"this\", \"here\" or \"the selection\".",
    read_only: true,
    ..PLAIN
},
Tool {
    name: "getLatestSelection",
    description: "The last selection the user made in a file of their editor, even if the cursor has \
                  moved to another window since: {success, text, filePath, fileUrl, selection}.",
    read_only: true,
    ..PLAIN
},
Tool {
    name: "getOpenEditors",
    description: "The files the user has open in their editor: {tabs: [{uri, isActive, isDirty, label, \
                  languageId, fileName, lineCount}]}. isActive: the one they are in; isDirty: it has \
                  unsaved changes.",
    read_only: true,
    ..PLAIN
},
Tool {
    name: "getWorkspaceFolders",
    description: "The project folders open in the user's editor: {success, folders: [{name, uri, path}], \
                  rootPath}.",
    read_only: true,
    ..PLAIN
},
Tool {
    name: "checkDocumentDirty",
    description: "Whether a file has unsaved changes in the user's editor (then what is on disk is not \
                  what they see): {success, filePath, isDirty, isUntitled}.",
    params: &[Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." }],
    read_only: true,
    ..PLAIN
},
Tool {
    name: "openFile",
    description: "Show a file to the user in their editor, optionally selecting lines or text, to point \
                  them at something. Changes nothing on disk.",
    params: &[
        Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." },
        crate::protocol::tools::pi_ide::START_LINE,
        crate::protocol::tools::pi_ide::END_LINE,
        crate::protocol::tools::pi_ide::START_TEXT,
        crate::protocol::tools::pi_ide::END_TEXT,
    ],
    read_only: true,
    ..PLAIN
},
Tool {
    name: "openDiff",
    description: "Propose new contents for a file and wait until the user has reviewed them in their \
                  editor, side by side with the file as it is. Answers FILE_SAVED followed by the \
                  contents the user accepted (they may have edited them: write exactly those), or \
                  DIFF_REJECTED when they said no (do not write the file then). The editor never \
                  writes the file: after FILE_SAVED, write it yourself. It may take minutes.",
    params: &[
        Param { name: "new_file_path", ty: Ty::String, required: true, description: "Absolute path of the file to write (it may not exist yet)." },
        Param { name: "new_file_contents", ty: Ty::String, required: true, description: "The whole proposed contents of the file." },
        Param { name: "tab_name", ty: Ty::String, required: true, description: "A short name for this review, unique among yours (e.g. the file's name)." },
    ],
    shape: Shape::Texts,
    hook: Hook::Review(&OPEN_DIFF),
    read_only: true,
    ..PLAIN
},
Tool {
    name: "saveDocument",
    description: "Save the user's unsaved changes of a file in their editor to disk (only when they \
                  have turned this tool on): {success, filePath, saved, message}.",
    params: &[Param { name: "filePath", ty: Ty::String, required: true, description: "Absolute path of the file." }],
    opt_in: true,
    ..PLAIN
},
Tool {
    name: "close_tab",
    description: "Take back a review you opened with openDiff that the user has not decided yet (it is \
                  answered DIFF_REJECTED): TAB_CLOSED. Only when the user has turned this tool on.",
    params: &[Param { name: "tab_name", ty: Ty::String, required: true, description: "The tab_name of your openDiff." }],
    shape: Shape::Texts,
    hook: Hook::CloseReview { tab: "tab_name" },
    reshape: Some(crate::protocol::tools::pi_ide::tab_closed),
    opt_in: true,
    read_only: true,
    ..PLAIN
},
];

/// openDiff's arguments: the file is both what is shown and where the contents go.
static OPEN_DIFF: ReviewArgs = ReviewArgs {
    tab: "tab_name",
    path: "new_file_path",
    old_path: None,
    contents: "new_file_contents",
    writes: Writes::Accepted,
    reports_trigger: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The bridge answers `tools/list` from bridge/tools.json before a Neovim is found; it must
    /// be this list. `PI_IDE_BLESS=1 cargo test` writes it anew after a change here.
    #[test]
    fn the_bridges_tool_list_is_this_one() {
        // What a session lists before the user turns anything on.
        let list: Vec<_> = TOOLS.iter().filter(|t| !t.opt_in).map(Tool::describe).collect();
        let want = serde_json::to_string_pretty(&serde_json::json!({ "tools": list })).unwrap() + "\n";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bridge/tools.json");
        if std::env::var_os("PI_IDE_BLESS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let got = std::fs::read_to_string(path).unwrap_or_default();
        assert!(got == want, "bridge/tools.json differs from the mcp agent's tools: run PI_IDE_BLESS=1 cargo test");
    }
}
