-- Tool calls parked in Rust reach Lua here. A handler gets (args, reply, call) and either
-- returns its answer (answered at once) or returns nil and calls reply(result) later, as the
-- blocking openDiff will. Every call is answered exactly once, even when a handler fails.
local log = require("pi-ide.log")

local M = {}

-- Each handler is (args, reply, event) -> answer | nil; see above.
M.handlers = {
  getDiagnostics = function(args)
    return require("pi-ide.tools.diagnostics").handle(args)
  end,
  getOpenEditorTabs = function()
    return require("pi-ide.tools.editors").open_editor_tabs()
  end,
  getOpenEditors = function()
    return require("pi-ide.tools.editors").open_editors()
  end,
  getWorkspaceFolders = function()
    return require("pi-ide.tools.editors").workspace_folders()
  end,
  getCurrentSelection = function()
    return require("pi-ide.tools.selection").current(require("pi-ide.native").get())
  end,
  getLatestSelection = function()
    return require("pi-ide.tools.selection").latest(require("pi-ide.native").get())
  end,
  openFile = function(args)
    return require("pi-ide.tools.open_file").handle(args)
  end,
  checkDocumentDirty = function(args)
    return require("pi-ide.tools.documents").dirty(args)
  end,
  saveDocument = function(args)
    return require("pi-ide.tools.documents").save(args)
  end,
  -- Answered when the user decides (see diff.lua).
  openDiff = function(args, reply, ev)
    require("pi-ide.diff").open(args, reply, ev)
  end,
  -- Each client closes its own reviews only.
  close_tab = function(args, _, ev)
    require("pi-ide.diff").close(args.tab_name, ev.client)
    return "TAB_CLOSED"
  end,
  closeAllDiffTabs = function(_, _, ev)
    return ("CLOSED_%d_DIFF_TABS"):format(require("pi-ide.diff").close_all(ev.client))
  end,
}

--- Handles one tool_call event from the Rust core.
function M.dispatch(native, ev)
  local INTERNAL_ERROR, METHOD_NOT_FOUND = native.codes.internal_error, native.codes.method_not_found
  local answered = false
  local function reply(result, err)
    if answered then
      return false
    end
    answered = true
    if err then
      return native.respond_error(ev.req, INTERNAL_ERROR, tostring(err))
    end
    local ok, sent = pcall(native.respond, ev.req, result)
    if not ok then
      log.error("%s: cannot send the answer: %s", ev.tool, tostring(sent))
      return native.respond_error(ev.req, INTERNAL_ERROR, ev.tool .. ": the editor's answer could not be encoded")
    end
    return sent
  end

  local handler = M.handlers[ev.tool]
  if not handler then
    answered = true
    native.respond_error(ev.req, METHOD_NOT_FOUND, "tool not available in this editor: " .. tostring(ev.tool))
    return
  end
  local ok, result = xpcall(handler, debug.traceback, ev.args, reply, ev)
  if not ok then
    log.error("tool %s failed: %s", ev.tool, tostring(result))
    local first = tostring(result):match("^[^\n]*")
    reply(nil, ("%s failed in the editor: %s"):format(ev.tool, first))
  elseif result ~= nil then
    reply(result)
  end
end

return M
