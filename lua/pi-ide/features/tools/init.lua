-- Tool calls parked in Rust reach Lua here. Each tool is one entry in the core (src/protocol/
-- tools/, or an agent's module in src/agents/: schema, checks, result shape, what is answered if
-- the editor stops) that names the Lua module with its handler: `require(module)[handler](args,
-- reply, call)` (another agent's tool shares the handler of the pi-ide tool of the same meaning;
-- the core maps its arguments and answer). A handler either returns its answer (answered at
-- once) or returns nil and calls reply(result) later. Every call is answered exactly once, even
-- when a handler fails. (Reviews are not tool calls to Lua: see features/review/.)
local log = require("pi-ide.core.log")

local M = {}

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

  local found, mod = pcall(require, ev.module)
  local handler = found and type(mod) == "table" and mod[ev.handler or ev.tool] or nil
  if type(handler) ~= "function" then
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
