-- What each op from Pi does to the chat: the core has already parsed the JSON and coalesced
-- the deltas, so text and thinking arrive as whole strings to append.
local log = require("pi-ide.core.log")
local view = require("pi-ide.features.chat.view").of("pi")

local M = {}

local function notify_if_hidden(chat_mod, message)
  if not chat_mod.visible() then
    vim.notify("pi-ide.nvim: " .. message, vim.log.levels.INFO)
  end
end

-- An assistant message that ended badly says so in one line. After the user's abort, the error
-- of a request Pi began as the abort arrived ("This operation was aborted") is that abort too.
local function message_end(chat, ev)
  local m = type(ev.message) == "table" and ev.message or {}
  if m.role ~= "assistant" then
    return
  end
  if m.stopReason == "aborted" or (m.stopReason == "error" and chat.aborting) then
    view.lines({ "⏹ aborted" })
  elseif m.stopReason == "error" then
    view.lines({ "✗ " .. tostring(m.errorMessage or "the model failed") })
  end
end

--- The end of agent `name`'s turn (its chat's view `v`): its checkpoint, and a line when the
--- turn changed files no review showed.
function M.turn_checked(name, v)
  local checkpoints = require("pi-ide.features.checkpoints")
  checkpoints.after_turn(name, function(t)
    local warning = t and checkpoints.warning_of(t)
    if warning then
      v.lines({ warning })
    end
  end)
end

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

-- Session events other than the drawn ones: one line each where the user should see them.
local events = {
  agent_start = function(chat_mod, _, chat)
    chat.aborting = nil
    chat_mod._set_state("working")
  end,
  agent_settled = function(chat_mod, _, chat)
    chat.aborting = nil
    view.finish()
    M.turn_checked("pi", view)
    chat_mod._set_state("idle")
    chat_mod._refresh_info()
    notify_if_hidden(chat_mod, "Pi finished")
  end,
  message_end = function(_, ev, chat)
    message_end(chat, ev)
  end,
  auto_retry_start = function(_, ev)
    view.lines({
      ("↻ retrying (attempt %s of %s) after: %s"):format(tostring(ev.attempt), tostring(ev.maxAttempts), tostring(ev.errorMessage)),
    })
  end,
  auto_retry_end = function(_, ev)
    if ev.success == false then
      view.lines({ "✗ gave up retrying: " .. tostring(ev.finalError) })
    end
  end,
  compaction_start = function(_, ev)
    if ev.reason ~= "manual" then
      view.lines({ ("⇣ compacting (%s)…"):format(tostring(ev.reason)) })
    end
  end,
  compaction_end = function(_, ev)
    local r = type(ev.result) == "table" and ev.result or nil
    if r then
      view.lines({
        ("⇣ compacted: %s → about %s"):format(plural(r.tokensBefore or 0, "token"), plural(r.estimatedTokensAfter or 0, "token")),
      })
    elseif ev.aborted then
      view.lines({ "⇣ compaction aborted" })
    else
      view.lines({ "✗ compaction failed: " .. tostring(ev.errorMessage) })
    end
  end,
  extension_error = function(_, ev)
    log.warn("chat: extension %s failed in %s: %s", tostring(ev.extensionPath), tostring(ev.event), tostring(ev.error))
    view.lines({ ("⚠ extension error (%s): %s"):format(tostring(ev.event), tostring(ev.error)) })
  end,
}

-- Pi's process ended: say how, with its last words on stderr.
local function exited(chat_mod, chat, op)
  require("pi-ide.features.chat.dialogs").forget()
  view.fail_running()
  chat.proc = nil
  chat_mod._set_state("idle")
  if chat.stopping then
    return
  end
  local how = op.signal and ("killed by signal %d"):format(op.signal) or ("exited with status %s"):format(tostring(op.code))
  local lines = { ("✗ Pi %s; the next prompt starts it again."):format(how) }
  if op.stderr and #op.stderr > 0 then
    vim.list_extend(lines, { "```" })
    vim.list_extend(lines, op.stderr)
    vim.list_extend(lines, { "```" })
  end
  view.lines(lines)
  notify_if_hidden(chat_mod, "Pi " .. how)
end

--- Draws `op` in `into` (a chat's view) when it is streamed text or a tool's block, as every
--- chat draws them; false for other ops.
function M.draw(into, op)
  local kind = op.kind
  if kind == "text" or kind == "thinking" then
    into.stream(kind, op.text)
  elseif kind == "tool_start" then
    into.tool_start(op.id, op.name, op.args)
  elseif kind == "tool_output" then
    into.tool_output(op.id, op.lines, op.more)
  elseif kind == "tool_end" then
    into.tool_end(op.id, op.lines, op.more, op.is_error, op.name)
  else
    return false
  end
  return true
end

--- Handles one op of the process `chat.proc`.
function M.handle(chat_mod, chat, op)
  local kind = op.kind
  if M.draw(view, op) then
    return
  elseif kind == "ui_request" then
    local req = op.request
    require("pi-ide.features.chat.dialogs").handle(req, function(fields)
      require("pi-ide.features.chat.process").send(chat.proc, fields)
    end)
    if req.method ~= "notify" and req.method ~= "setStatus" and req.method ~= "setWidget" then
      notify_if_hidden(chat_mod, "Pi needs your input")
    end
  elseif kind == "event" then
    local handler = events[op.type]
    if handler then
      handler(chat_mod, op.event, chat)
    end
  elseif kind == "response" then
    -- A response nobody waits for: a failure is worth a line in the log.
    if not op.success then
      log.warn("chat: %s failed: %s", tostring(op.command), tostring(op.error))
    end
  elseif kind == "exit" then
    exited(chat_mod, chat, op)
  end
end

return M
