-- Requests to the agent (getSuggestions, listSuggestionModels) and their answers. The core
-- sends them to the client that initialized last, matches answers by id and drops late ones.
local log = require("pi-ide.core.log")

local M = {}

local waiting = {} -- req -> callback(result, err)

--- Sends a request; `callback(result, err)` runs once with the answer, or with an error
--- ({ code, message }) for an agent error, a timeout or a disconnect. Returns the request's
--- number, or nil, a sentence for the user and why it could not be sent as a code the core
--- defines (`native.send_errors`: "no_agent", "disconnecting", "not_running").
function M.send(method, params, timeout_ms, callback)
  local native = require("pi-ide.core.native").get()
  if not native or not require("pi-ide.core.server").running() then
    return nil, "the server is not running", "not_running"
  end
  local req, code, message, superseded = native.request(method, params, timeout_ms)
  if not req then
    return nil, message, code
  end
  waiting[req] = callback
  -- An older request of the same method had not gone out yet (the agent is not reading): it
  -- never will, so it ends here.
  local older = superseded and waiting[superseded]
  if older then
    waiting[superseded] = nil
    log.guard("an answer handler", older)(nil, { code = -32800, message = "superseded by a newer request" })
  end
  return req
end

--- Cancels: the agent is told (request_cancelled) and the callback never runs.
function M.cancel(req)
  if req and waiting[req] then
    waiting[req] = nil
    local native = require("pi-ide.core.native").get()
    if native then
      native.cancel(req)
    end
  end
end

--- A `response` event from the core.
function M.resolve(ev)
  local callback = waiting[ev.req]
  waiting[ev.req] = nil
  if callback then
    log.guard("an answer handler", callback)(ev.result, ev.error)
  end
end

--- The server stopped: nothing will be answered any more.
function M.reset()
  waiting = {}
end

return M
