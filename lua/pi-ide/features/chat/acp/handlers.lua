-- What each op of an ACP agent does to its chat. Text, thoughts and tool calls draw as Pi's do;
-- the agent's questions that carry no change (the core reviews those) are asked here: a
-- permission in vim.ui.select with the agent's own options (never while the user types), a
-- file read from the buffer that holds the file, unsaved text included.
local log = require("pi-ide.core.log")
local process = require("pi-ide.features.chat.process")

local M = {}

local function notify_if_hidden(chat, message)
  if not chat:visible() then
    vim.notify(("pi-ide.nvim: %s %s"):format(chat:label(), message), vim.log.levels.INFO)
  end
end

local function answer(chat, key, result, message)
  if chat.asking[key] then
    chat.asking[key] = nil
    process.answer(chat.proc, key, result, message)
    chat:changed()
  end
end

-- Runs `fn` now, or once the user is back in Normal mode (Insert, Visual, Command-line): a
-- picker would take their keys (a digit, <CR> picking "Allow"), so it waits, as a review does.
local function when_not_typing(chat, fn)
  local typing = require("pi-ide.core.typing")
  if not typing.busy_mode() then
    return fn()
  end
  typing.say_waiting(chat:label() .. "'s question")
  typing.when_normal("showing " .. chat:label() .. "'s question", fn)
end

local KIND = { allow_once = "allow once", allow_always = "always allow", reject_once = "reject", reject_always = "always reject" }

local function text_or_nil(v)
  return type(v) == "string" and v ~= "" and v or nil
end

-- The block of the tool call a question is about, when no tool_call update opened it.
local function ensure_block(chat, tool)
  if type(tool) ~= "table" or not text_or_nil(tool.id) or chat.view.has_tool(tool.id) then
    return
  end
  local raw = type(tool.rawInput) == "table" and tool.rawInput or nil
  chat.view.tool_start(tool.id, text_or_nil(tool.title) or text_or_nil(tool.kind) or "tool", raw)
end

local function permission(chat, key, params)
  local call = type(params.toolCall) == "table" and params.toolCall or {}
  ensure_block(chat, { id = call.toolCallId, title = call.title, kind = call.kind, rawInput = call.rawInput })
  -- The agent's once options: the core leaves out any "always" (a standing answer the user
  -- never gave), and answers cancelled to one picked anyway.
  local options = type(params.options) == "table" and params.options or {}
  local title = tostring(call.title or call.kind or "permission")
  -- A change in a shape we cannot read: allowing it allows what no one has seen.
  local why = type(params.unshown_why) == "string" and (": " .. params.unshown_why) or ""
  local unshown = params.unshown_change and (" (it changes a file, but the change could not be shown here%s)"):format(why) or ""
  chat.view.lines({ ("❓ %s asks: %s%s"):format(chat:label(), title, unshown) })
  notify_if_hidden(chat, "needs your answer")
  when_not_typing(chat, function()
    if not chat.asking[key] then
      return -- cancelled meanwhile
    end
    vim.ui.select(options, {
      prompt = ("%s: %s%s"):format(chat:label(), tostring(call.title or "allow?"), unshown),
      format_item = function(o)
        return ("%s (%s)"):format(tostring(o.name), KIND[o.kind] or tostring(o.kind))
      end,
    }, function(choice)
      local outcome = choice and { outcome = "selected", optionId = choice.optionId } or { outcome = "cancelled" }
      answer(chat, key, { outcome = outcome })
    end)
  end)
end

-- The text of the buffer that holds `path`, when one is loaded (lines `line`.. `line+limit-1`).
local function buffer_text(path, line, limit)
  local buf = require("pi-ide.core.buffers").find(path)
  if not (buf and vim.api.nvim_buf_is_loaded(buf)) then
    return nil
  end
  local first = math.max((tonumber(line) or 1) - 1, 0)
  local last = limit and (first + tonumber(limit)) or -1
  local lines = vim.api.nvim_buf_get_lines(buf, first, last, false)
  local text = table.concat(lines, "\n")
  local whole = last == -1 or last >= vim.api.nvim_buf_line_count(buf)
  if #lines > 0 and (not whole or vim.bo[buf].eol or vim.bo[buf].fixeol) then
    text = text .. "\n"
  end
  return text
end

local function request(chat, op)
  chat.asking[op.id] = true
  if op.method == "session/request_permission" then
    return permission(chat, op.id, op.params or {})
  end
  local p = op.params or {}
  local text = type(p.path) == "string" and buffer_text(p.path, p.line, p.limit)
  -- nil: no buffer holds it; the core reads the file from disk.
  answer(chat, op.id, text and { content = text } or nil)
end

local function plan(chat, ev)
  local marks = { completed = "☑", in_progress = "◐" }
  local lines = { "📋 plan" }
  for _, e in ipairs(type(ev.entries) == "table" and ev.entries or {}) do
    table.insert(lines, ("  %s %s"):format(marks[e.status] or "☐", tostring(e.content)))
  end
  chat.view.lines(lines)
end

local events = {
  plan = plan,
  -- A loaded session's replay: the user's prompts as their sections.
  user_message_chunk = function(chat, ev)
    local text = type(ev.content) == "table" and ev.content.text
    if type(text) == "string" then
      chat.view.user(text, nil, chat:label())
    end
  end,
  available_commands_update = function(chat, ev)
    chat.commands = type(ev.availableCommands) == "table" and ev.availableCommands or {}
  end,
  -- The agent withdrew a question: its dialog will answer no one.
  withdrawn = function(chat, ev)
    chat.asking[ev.id] = nil
    chat:changed()
  end,
  current_mode_update = function(chat, ev)
    chat.info.mode = ev.currentModeId
    chat:changed()
  end,
  usage_update = function(chat, ev)
    chat.info.used, chat.info.size, chat.info.cost = ev.used, ev.size, ev.cost
    chat:changed()
  end,
  review = function(chat, ev)
    ensure_block(chat, ev.tool)
    local typing = require("pi-ide.core.typing")
    -- A review opens only once the user is out of Insert, Visual or Command-line mode.
    local waits = typing.busy_mode() and (", waiting until you leave %s mode"):format(typing.mode_name()) or ""
    -- Named as its review's winbar names it: where a link leads, and a file outside the workspace.
    local winbar = require("pi-ide.features.review.winbar")
    local path, real = tostring(ev.path), type(ev.real_path) == "string" and ev.real_path or nil
    if require("pi-ide.features.review.after").applies(chat.name, path, real, ev.linked == true) then
      -- review.when = "after": accepted at once; decided in the file once written.
      return chat.view.lines({ ("⚖ %s: accepted at once, decided once written (review.when = \"after\")"):format(winbar.target_name(path, real, false)) })
    end
    local outside = winbar.outside(path, real) and " ⚠ outside the workspace" or ""
    chat.view.lines({ ("⚖ review: %s%s (:w accepts, :q rejects%s)"):format(winbar.target_name(path, real, ev.linked == true), outside, waits) })
    notify_if_hidden(chat, "proposes a change: its review is open")
  end,
  -- What the agent wrote after an allow, read back: the text the user accepted (`rewritten`:
  -- set over its proposal, which the user accepted only in part: the agent is told), or not.
  landed = function(chat, ev)
    local name = vim.fn.fnamemodify(tostring(ev.path), ":~:.")
    if ev.as_accepted and ev.rewritten then
      chat.view.lines({ ("✎ %s wrote its proposal to %s; your accepted text was written over it (%s is told at your next prompt)"):format(chat:label(), name, chat:label()) })
      local note = type(ev.note) == "string" and ev.note or "the user edited it"
      table.insert(chat.notes, ("The user accepted your change to %s only in part: %s. The file now holds the text the user accepted, not what you wrote: read it again before changing it."):format(tostring(ev.path), note))
      return require("pi-ide.features.review.reload").when_written(ev.path)
    elseif ev.as_accepted then
      return chat.view.lines({ ("✎ %s wrote %s, as you accepted it"):format(chat:label(), name) })
    end
    local why = type(ev.why) == "string" and (" (%s)"):format(ev.why) or ""
    chat.view.lines({
      ("⚠ %s: %s wrote other text than you accepted%s"):format(name, chat:label(), why),
      "  :PiIde changes shows it, :PiIde undo takes the turn back",
    })
    require("pi-ide.core.events").fire("PiIdeWroteOther", { path = ev.path, agent = chat.name })
    notify_if_hidden(chat, ("wrote other text to %s than you accepted"):format(name))
  end,
  -- An accepted change we were to write could not be (the file changed or was swapped since).
  write_refused = function(chat, ev)
    chat.view.lines({ ("✗ %s was not written: %s"):format(vim.fn.fnamemodify(tostring(ev.path), ":~:."), tostring(ev.why)) })
    notify_if_hidden(chat, "could not write a change you accepted")
  end,
  change_refused = function(chat, ev)
    ensure_block(chat, ev.tool)
    chat.view.lines({ ("✗ the change to %s cannot be shown (%s): rejected"):format(vim.fn.fnamemodify(tostring(ev.path), ":~:."), tostring(ev.why)) })
  end,
  written = function(chat, ev)
    local name = vim.fn.fnamemodify(tostring(ev.path), ":~:.")
    if ev.edited then
      -- ACP's answer to a write carries no text: the agent believes its own. Told at the next prompt.
      chat.view.lines({ ("✎ wrote %s with your edits (%s is told at your next prompt)"):format(name, chat:label()) })
      local what = type(ev.note) == "string" and ev.note or "the user edited it"
      table.insert(chat.notes, ("Before accepting your change to %s, the user changed it: %s. The file differs from what you proposed: read it again before changing it."):format(tostring(ev.path), what))
    else
      chat.view.lines({ ("✎ wrote %s, as you accepted it"):format(name) })
    end
    require("pi-ide.features.review.reload").when_written(ev.path)
  end,
}

-- The agent's process ended: say how, with its last words on stderr.
local function exited(chat, op)
  chat.proc, chat.session, chat.starting, chat.asking = nil, nil, false, {}
  chat.view.fail_running()
  chat:set_state("idle")
  if chat.stopping then
    return
  end
  local how = op.signal and ("was killed by signal %d"):format(op.signal) or ("exited with status %s"):format(tostring(op.code))
  local lines = { ("✗ %s %s; the next prompt starts it again."):format(chat:label(), how) }
  if op.stderr and #op.stderr > 0 then
    vim.list_extend(lines, { "```" })
    vim.list_extend(lines, op.stderr)
    vim.list_extend(lines, { "```" })
  end
  chat.view.lines(lines)
  notify_if_hidden(chat, how)
end

--- The answer to session/prompt: the turn is over.
function M.turn_ended(chat, r)
  chat.view.finish()
  chat:set_state("idle")
  local reason = r.success and type(r.data) == "table" and r.data.stopReason or nil
  if not r.success then
    chat.view.lines({ "✗ " .. tostring(r.error or "the turn failed") })
  elseif reason == "cancelled" then
    chat.view.lines({ "⏹ aborted" })
  elseif reason == "refusal" then
    chat.view.lines({ "✗ the agent refused" })
  elseif reason == "max_tokens" or reason == "max_turn_requests" then
    chat.view.lines({ "⚠ stopped: " .. reason })
  end
  require("pi-ide.features.chat.handlers").turn_checked(chat.name, chat.view)
  notify_if_hidden(chat, "finished")
end

--- Handles one op of chat `chat`'s agent.
function M.handle(chat, op)
  local kind = op.kind
  if require("pi-ide.features.chat.handlers").draw(chat.view, op) then
    return
  elseif kind == "agent_request" then
    request(chat, op)
  elseif kind == "event" and events[op.type] then
    events[op.type](chat, op.event or {})
  elseif kind == "response" and not op.success then
    log.warn("chat %s: %s", chat.name, tostring(op.error))
  elseif kind == "exit" then
    exited(chat, op)
  end
end

return M
