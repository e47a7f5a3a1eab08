-- The `pi --mode rpc` process behind the chat. The Rust core runs it (spawn, its pipes, JSON
-- parsing, coalescing deltas, waking us at most once a frame); this file starts and stops it,
-- sends commands with a callback for their response, and hands each drawn op to `on_op`.
local log = require("pi-ide.core.log")

local M = {}

-- { id = core chat id, async = uv handle, pending = { [request id] = callback } }
local current
local next_request = 0

local function native()
  return require("pi-ide.core.native").get()
end

local function handle(proc, op)
  if op.kind == "response" and op.id and proc.pending[op.id] then
    local cb = proc.pending[op.id]
    proc.pending[op.id] = nil
    cb(op)
    return
  end
  if op.kind == "exit" then
    -- Commands that will never be answered get an answer saying so.
    local pending = proc.pending
    proc.pending = {}
    for _, cb in pairs(pending) do
      cb({ kind = "response", success = false, error = "Pi exited" })
    end
    M.forget(proc)
  end
  proc.on_op(op)
end

-- What drawing costs the main loop (the benchmark reads it): time in drains, how many, the
-- longest.
local function measure(proc, t0)
  local spent = vim.uv.hrtime() - t0
  proc.busy_ns = proc.busy_ns + spent
  proc.drains = proc.drains + 1
  proc.longest_ns = math.max(proc.longest_ns, spent)
end

local function drain(proc)
  if not proc.id then
    return
  end
  local t0 = vim.uv.hrtime()
  local ok, ops = pcall(native().chat_drain, proc.id)
  if not ok then
    return log.error("chat drain failed: %s", tostring(ops))
  end
  if ops[1] and proc.on_up then
    local up = proc.on_up
    proc.on_up = nil
    pcall(up)
  end
  for _, op in ipairs(ops) do
    local handled, err = xpcall(handle, debug.traceback, proc, op)
    if not handled then
      log.error("chat: handling %s failed: %s", tostring(op.kind), tostring(err))
    end
  end
  measure(proc, t0)
end

--- Starts Pi: `spec` = { cmd, cwd, env, tool_lines, on_op = function(op), on_up = function() }
--- (on_up: once, when the first op comes: Pi is up). Returns the process, or nil and why.
function M.start(spec)
  local core = native()
  if not core then
    local _, err = require("pi-ide.core.native").load()
    return nil, err
  end
  local proc = { pending = {}, on_op = spec.on_op, on_up = spec.on_up, acp = spec.acp ~= nil }
  proc.busy_ns, proc.drains, proc.longest_ns = 0, 0, 0
  proc.async = vim.uv.new_async(require("pi-ide.core.schedule").once(function()
    drain(proc)
  end))
  local ok, id = pcall(core.chat_start, {
    cmd = spec.cmd,
    cwd = spec.cwd,
    env = spec.env,
    cap_lines = spec.tool_lines,
    acp = spec.acp,
  }, proc.async)
  if not ok then
    proc.async:close()
    return nil, tostring(id):gsub("^.-: ", "", 1)
  end
  proc.id = id
  current = proc
  log.info("chat: started %s (pid %s): %s", spec.acp and spec.acp.label or "Pi", tostring(core.chat_pid(id)), table.concat(spec.cmd, " "))
  return proc
end

-- Sends `message` (a table, or a line of JSON) with `cb` waiting for the answer to `id`.
local function post(proc, id, cb, message)
  proc.pending[id] = cb
  local ok, sent = pcall(native().chat_send, proc.id, message)
  if not (ok and sent) then
    proc.pending[id] = nil
    return false
  end
  return true
end

--- Sends a command (a table with `type`); `cb(response_op)` gets its response (commands
--- without an `id` get one). False when Pi
--- is not running.
function M.send(proc, command, cb)
  if not proc or not proc.id then
    return false
  end
  -- An extension_ui_response carries the id of the request it answers.
  local id = command.id
  if not id then
    next_request = next_request + 1
    id = "nvim-" .. next_request
    command = vim.tbl_extend("force", command, { id = id })
  end
  return post(proc, id, cb, command)
end

--- Sends a JSON-RPC request (ACP) with an id of ours; `cb(response_op)` gets its response.
--- Encoded here (vim.json: an empty table is an empty list, as ACP's lists want). False when
--- not running.
function M.rpc(proc, method, params, cb)
  if not proc or not proc.id then
    return false
  end
  next_request = next_request + 1
  local id = "nvim-" .. next_request
  return post(proc, id, cb, vim.json.encode({ jsonrpc = "2.0", id = id, method = method, params = params }))
end

--- Sends a message that wants no answer (an ACP notification: no id). False when not running.
function M.notify(proc, message)
  if not proc or not proc.id then
    return false
  end
  local ok, sent = pcall(native().chat_send, proc.id, type(message) == "table" and vim.json.encode(message) or message)
  return ok and sent == true
end

--- Answers an ACP agent's question `key` (an agent_request op): `result`, or the error
--- `message`; neither, for a file read: the core reads the file from disk.
function M.answer(proc, key, result, message)
  return proc ~= nil and proc.id ~= nil and native().chat_answer(proc.id, key, result, message)
end

--- An ACP turn cancelled on our side: the agent's questions answered `cancelled`, their reviews
--- taken away. Returns how many.
function M.cancel(proc)
  return proc and proc.id and native().chat_cancel(proc.id) or 0
end

--- Sends `command` and waits (at most `ms`) for its response: for commands the user waits on
--- anyway (pickers). Returns the response op, or nil on timeout.
function M.request(proc, command, ms)
  local got
  if not M.send(proc, command, function(r)
    got = r
  end) then
    return nil
  end
  vim.wait(ms or 5000, function()
    return got ~= nil
  end, 10)
  return got
end

-- The core's side is gone (it exited): close our handle.
function M.forget(proc)
  if proc.id then
    pcall(native().chat_stop, proc.id, 0)
    proc.id = nil
  end
  if proc.async and not proc.async:is_closing() then
    proc.async:close()
  end
  if current == proc then
    current = nil
  end
end

--- Ends Pi: abort what it does, close its input, wait up to `grace_ms`, then signals. No
--- process is left behind.
function M.stop(proc, grace_ms)
  if not proc or not proc.id then
    return
  end
  if not proc.acp then
    pcall(native().chat_send, proc.id, { type = "abort" }) -- Pi's; an ACP agent's stdin just closes
  end
  pcall(native().chat_stop, proc.id, grace_ms or 500)
  proc.id = nil
  M.forget(proc)
end

function M.running(proc)
  return proc ~= nil and proc.id ~= nil
end

--- The core's counts (lines, text_deltas, wakes, ...) and the main loop's share: busy_ns,
--- drains, longest_ns.
function M.stats(proc)
  local s = proc and proc.id and native().chat_stats(proc.id)
  if s then
    s.busy_ns, s.lua_drains, s.longest_ns = proc.busy_ns, proc.drains, proc.longest_ns
  end
  return s
end

--- The process running now, if any (for VimLeavePre).
function M.current()
  return current
end

return M
