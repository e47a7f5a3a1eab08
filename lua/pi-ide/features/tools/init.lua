-- Tool calls parked in Rust reach Lua here. Each tool is one entry in the core (src/protocol/
-- tools/, or an agent's module in src/agents/: schema, checks, result shape, what is answered if
-- the editor stops) that names its handler (another agent's tool shares the handler of the
-- pi-ide tool of the same meaning; the core maps its arguments and answer); HANDLERS below says
-- which module has it: `require(HANDLERS[handler])[handler](args, reply, call)`. A handler
-- either returns its answer (answered at once) or returns nil and calls reply(result) later.
-- Every call is answered exactly once, even when a handler fails. (Reviews are not tool calls
-- to Lua: see features/review/.)
local log = require("pi-ide.core.log")

local M = {}

-- The module of each handler, by its name: the core names handlers, never Lua files. A module
-- is loaded at the first call of one of its handlers.
local HANDLERS = {
  getDiagnostics = "pi-ide.features.tools.diagnostics",
  getCurrentSelection = "pi-ide.features.tools.selection",
  getLatestSelection = "pi-ide.features.tools.selection",
  getOpenEditorTabs = "pi-ide.features.tools.editors",
  getOpenEditors = "pi-ide.features.tools.editors",
  getWorkspaceFolders = "pi-ide.features.tools.editors",
  checkDocumentDirty = "pi-ide.features.tools.documents",
  saveDocument = "pi-ide.features.tools.documents",
  openFile = "pi-ide.features.tools.open_file",
  closeReview = "pi-ide.features.review",
}

--- The function named `name` (a handler the core names), or nil when there is none.
function M.handler(name)
  if not HANDLERS[name] then
    return nil
  end
  local found, mod = pcall(require, HANDLERS[name])
  local fn = found and type(mod) == "table" and mod[name]
  return type(fn) == "function" and fn or nil
end

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

  local handler = M.handler(ev.handler or ev.tool)
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
