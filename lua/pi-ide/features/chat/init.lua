-- :PiIde chat: Pi in RPC mode, in a chat window of Neovim. Its pi-ide extension (when the user
-- has it) connects to this Neovim as a launched Pi does, so its writes come to our review and
-- its model gives the ghost text. This file keeps the state (idle, working, waiting) and turns
-- what Pi sends into what the view draws; process.lua runs Pi, view.lua draws, window.lua
-- places the windows, dialogs.lua answers extensions, sessions.lua finds earlier sessions.
local log = require("pi-ide.core.log")
local process = require("pi-ide.features.chat.process")
local view = require("pi-ide.features.chat.view").of("pi")
local window = require("pi-ide.features.chat.window")

local M = {}

-- The agent the chat hosts (lua/pi-ide/agents/: the one with `chat`), and the tag of its launch:
-- its lockfile holds a token of its own, so the client that comes with it is the chat's.
local function agent()
  return require("pi-ide.agents").chat()
end
local TAG = "chat"

vim.api.nvim_set_hl(0, "PiIdeChatWarning", { link = "WarningMsg", default = true })

-- proc: the running Pi; state: "idle"|"working"; info: what the header shows (model, thinking,
-- tokens, session file); extension: whether the pi-ide extension is in Pi (nil: not known yet).
local chat = { state = "idle", info = {} }

local function cfg()
  return require("pi-ide.core.config").values.chat
end

-- The client that is the chat's Pi (its extension connected with the chat's token), if any.
local function own_client()
  local native = require("pi-ide.core.native").get()
  return native and require("pi-ide.core.server").running() and native.client_tagged(TAG) or nil
end

local function prompt_buf()
  if not (chat.prompt and vim.api.nvim_buf_is_loaded(chat.prompt)) then
    -- :bd leaves a buffer valid but empty, its keys gone: start afresh.
    if chat.prompt and vim.api.nvim_buf_is_valid(chat.prompt) then
      pcall(vim.api.nvim_buf_delete, chat.prompt, { force = true })
    end
    chat.prompt = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, chat.prompt, "Pi prompt")
    -- Not "markdown": a user's Markdown setup (an LSP, snippets, a completion menu over the
    -- chat) has no business in a prompt. Highlighted as Markdown all the same.
    vim.bo[chat.prompt].filetype = "pi-ide-chat-prompt"
    vim.bo[chat.prompt].syntax = "markdown"
    vim.b[chat.prompt].completion = false -- blink.cmp and others honour it
    require("pi-ide.features.chat.keys").prompt(chat.prompt)
  end
  return chat.prompt
end

local function conv_buf()
  local buf = view.buf()
  if not vim.b[buf].pi_ide_chat_keys then
    vim.b[buf].pi_ide_chat_keys = true
    require("pi-ide.features.chat.keys").conversation(buf)
  end
  return buf
end

function M.visible()
  return chat.prompt ~= nil and window.visible(view.buf(), chat.prompt)
end

-- Both windows show (after :q in one of them, or <C-w>o, only one does).
local function whole()
  local conv, prompt = window.windows(view.buf(), chat.prompt or -1)
  return conv ~= nil and prompt ~= nil
end

-- The winbar: model, thinking level, tokens, and what Pi is doing; a warning when writes are
-- not reviewed.
local function header()
  local i = chat.info
  local parts = { "π " .. (i.model or "Pi") }
  if i.thinking and i.thinking ~= "off" then
    table.insert(parts, "thinking " .. i.thinking)
  end
  if i.tokens then
    table.insert(parts, i.tokens)
  end
  local state = M.status()
  if state ~= "" then
    table.insert(parts, (state:gsub("^π ", "")))
  end
  local text = table.concat(parts, " · "):gsub("%%", "%%%%")
  if chat.extension == false then
    text = text .. " %#PiIdeChatWarning#writes NOT reviewed%*"
  end
  return text
end

--- Something the header or the statusline shows changed.
function M.changed()
  if chat.prompt then
    window.set_header(view.buf(), header())
  end
  vim.cmd.redrawstatus({ bang = true })
end

local function set_state(state)
  if chat.state ~= state then
    chat.state = state
    require("pi-ide.core.events").fire("PiIdeChatState", { state = state })
    M.changed()
  end
end

local function short_tokens(n)
  return n >= 1000 and ("%.1fk"):format(n / 1000) or tostring(n)
end

-- Model, thinking level and token use, from get_state and get_session_stats.
local function refresh_info()
  process.send(chat.proc, { type = "get_state" }, function(r)
    local d = r.success and type(r.data) == "table" and r.data or {}
    if type(d.model) == "table" then
      chat.info.model = d.model.name or d.model.id
      chat.info.model_key = (d.model.provider or "") .. "/" .. (d.model.id or "")
    end
    chat.info.thinking = type(d.thinkingLevel) == "string" and d.thinkingLevel or nil
    chat.info.session_file = type(d.sessionFile) == "string" and d.sessionFile or chat.info.session_file
    M.changed()
  end)
  process.send(chat.proc, { type = "get_session_stats" }, function(r)
    local d = r.success and type(r.data) == "table" and r.data or {}
    local usage = type(d.contextUsage) == "table" and d.contextUsage or nil
    if usage and type(usage.tokens) == "number" then
      chat.info.tokens = ("%s tokens (%d%%)"):format(short_tokens(usage.tokens), usage.percent or 0)
    elseif type(d.tokens) == "table" and type(d.tokens.total) == "number" then
      chat.info.tokens = short_tokens(d.tokens.total) .. " tokens"
    end
    M.changed()
  end)
end

-- The top of the conversation says whether Pi's writes come to a review here.
local function banner()
  if chat.extension == false then
    view.banner({
      "> ⚠ **Writes are not reviewed**: the pi-ide extension is not installed in Pi, so Pi writes files without asking Neovim. Install it: `"
        .. agent().chat.extension.install
        .. "`, then `:PiIde chat restart`.",
    })
  elseif chat.connected then
    view.banner({ ("> ✓ %s: Pi's writes open a review here."):format(chat.connected) })
  end
end

-- Whether the pi-ide extension is in this Pi: it registers its command (/ide).
local function check_extension()
  local command = agent().chat.extension.command
  process.send(chat.proc, { type = "get_commands" }, function(r)
    local found = false
    for _, c in ipairs(r.success and type(r.data) == "table" and r.data.commands or {}) do
      if type(c) == "table" and c.name == command and c.source == "extension" then
        found = true
      end
    end
    chat.extension = found
    banner()
    M.changed()
  end)
end

local handlers = require("pi-ide.features.chat.handlers")

--- Starts Pi when it is not running. Returns true when it runs.
function M.ensure()
  if process.running(chat.proc) then
    return true
  end
  local agents, name = require("pi-ide.agents"), agent().name
  local cmd, agent_env = agents.command(name, agent().chat.args)
  vim.list_extend(cmd, vim.deepcopy(cfg().args))
  local missing = agents.missing(name, cmd)
  if missing then
    log.notify(missing, vim.log.levels.ERROR)
    return false
  end
  -- After a crash, the same session goes on.
  local session = chat.info.session_file
  if session and vim.uv.fs_stat(session) then
    vim.list_extend(cmd, { "--session", session })
  end
  local cwd = vim.fn.getcwd()
  local launch = { env = agent_env, cwd = cwd, tag = TAG }
  local env, err = require("pi-ide.features.terminal.connect").env_for(name, launch)
  if not env then
    log.notify(err, vim.log.levels.ERROR)
    return false
  end
  chat.cwd = cwd
  require("pi-ide.features.chat.undone").watch()
  local proc, start_err = process.start({
    cmd = cmd,
    cwd = cwd,
    env = vim.tbl_extend("force", agent_env, env),
    tool_lines = cfg().tool_lines,
    on_op = function(op)
      handlers.handle(M, chat, op)
    end,
    on_up = function()
      chat.starting = false
      M.changed()
    end,
  })
  if not proc then
    log.notify(start_err, vim.log.levels.ERROR)
    return false
  end
  chat.proc = proc
  chat.extension, chat.connected = nil, nil
  -- Pi takes a second or two to start; until it answers, the header and statusline say so.
  chat.starting = true
  check_extension()
  refresh_info()
  M.changed()
  return true
end

-- Internal, for handlers.lua.
M._refresh_info = refresh_info
M._set_state = set_state

--- Shows the chat (starting Pi); `focus`: the cursor goes to the prompt, in Insert mode.
function M.open(focus)
  if not M.ensure() then
    return false
  end
  require("pi-ide.features.chat.front").set("pi")
  local here = vim.api.nvim_get_current_win()
  if not whole() then
    require("pi-ide.features.chat.front").hide_others("pi")
    local conv, err = window.open(conv_buf(), prompt_buf())
    if not conv then
      log.notify("cannot open the chat: " .. tostring(err), vim.log.levels.ERROR)
      return false
    end
    M.changed()
  end
  if focus then
    local _, prompt = window.windows(view.buf(), chat.prompt)
    if prompt then
      vim.api.nvim_set_current_win(prompt)
      vim.cmd.startinsert({ bang = true })
    end
  elseif vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
  return true
end

function M.hide()
  if chat.prompt then
    window.hide(view.buf(), chat.prompt)
  end
end

--- :PiIde chat: shows it, or hides it when it shows.
function M.toggle()
  if whole() then
    M.hide()
  else
    M.open(true)
  end
end

--- Sends a prompt; while Pi works it steers or follows up (chat.while_working).
function M.send(text)
  if not text or vim.trim(text) == "" then
    return false
  end
  if not M.ensure() then
    return false
  end
  -- Pi ignores streamingBehavior when idle; sent always, a second prompt sent before Pi's
  -- agent_start is drawn queues instead of being refused.
  local behavior = cfg().while_working == "follow_up" and "followUp" or "steer"
  -- What the user undid of Pi's own writes since goes first (chat/undone.lua).
  local undone = require("pi-ide.features.chat.undone")
  local note, noted = undone.note("pi")
  local message = note and (note .. "\n\n" .. text) or text
  local command = { type = "prompt", message = message, streamingBehavior = behavior }
  local function send()
    local sent = process.send(chat.proc, command, function(r)
      if not r.success then
        view.lines({ "✗ " .. tostring(r.error or "Pi refused the prompt") })
      end
    end)
    if not sent then
      log.notify("Pi has just exited: the prompt was not sent (it stays; send it again to start Pi)", vim.log.levels.WARN)
    end
    return sent
  end
  local steering = chat.state == "working"
  -- A new turn goes after its checkpoint (features/checkpoints/); a steer is part of the turn.
  if not steering and not process.running(chat.proc) then
    return false
  elseif steering then
    if not send() then
      return false
    end
  else
    require("pi-ide.features.checkpoints").before_turn("pi", text, send, function()
      return chat.state == "working"
    end)
  end
  undone.told("pi", noted)
  if note then
    view.lines({ "↺ Pi is told: " .. note })
  end
  view.user(text, steering and behavior or nil)
  return true
end

--- Sends what the prompt area holds and empties it; whether it was sent.
function M.send_prompt_area()
  local buf = prompt_buf()
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if M.send(text) then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    return true
  end
  return false
end

--- Puts `text` in the prompt area after what it holds, the cursor after it (for :PiIde ask
--- with a range).
function M.set_prompt(text)
  local buf = prompt_buf()
  window.set_prompt(view.buf(), buf, text)
end

--- The pi-ide extension in the chat's Pi connected to this Neovim (its "Auto-connected" note).
function M.connected(message)
  chat.connected = message
  banner()
end

--- Stops what Pi does. A review Pi waits on is rejected: Pi cannot stop before it is answered.
--- The abort goes first, so that Pi sees it before the rejection lets its turn go on.
function M.abort()
  if not process.running(chat.proc) then
    return log.notify("Pi is not running in the chat", vim.log.levels.INFO)
  end
  chat.aborting = true
  process.send(chat.proc, { type = "abort" })
  local client = own_client()
  if client then
    require("pi-ide.features.review").reject_of_client(client)
  end
end

--- Runs `command` when Pi runs (starting it), calling `done(data)` on success and saying
--- what went wrong otherwise.
local function command(cmd, what, done)
  if not M.ensure() then
    return
  end
  process.send(chat.proc, cmd, function(r)
    if r.success then
      if done then
        done(type(r.data) == "table" and r.data or {})
      end
    else
      log.notify(("%s failed: %s"):format(what, tostring(r.error)), vim.log.levels.ERROR)
    end
  end)
end

function M.new()
  command({ type = "new_session" }, "a new session", function(d)
    if not d.cancelled then
      view.clear()
      banner()
      chat.info.tokens = nil
      refresh_info()
    end
  end)
end

function M.compact(instructions)
  local cmd = { type = "compact" }
  if instructions and instructions ~= "" then
    cmd.customInstructions = instructions
  end
  view.lines({ "⇣ compacting…" })
  command(cmd, "compacting", function()
    refresh_info()
  end)
end

function M.export(path)
  local cmd = { type = "export_html" }
  if path and path ~= "" then
    cmd.outputPath = vim.fn.fnamemodify(path, ":p")
  end
  command(cmd, "exporting", function(d)
    -- Pi answers with a path relative to its folder when it picked the name.
    local where = tostring(d.path)
    if type(d.path) == "string" and d.path:sub(1, 1) ~= "/" then
      where = vim.fs.joinpath(chat.cwd or vim.fn.getcwd(), d.path)
    end
    vim.notify("pi-ide.nvim: the chat is exported to " .. where, vim.log.levels.INFO)
  end)
end

--- Replaces the conversation with a session's messages (after switch_session, or resume).
function M.show_history()
  command({ type = "get_messages" }, "reading the session", function(d)
    view.clear()
    banner()
    require("pi-ide.features.chat.history").render(d.messages or {})
    refresh_info()
  end)
end

function M.switch(path)
  command({ type = "switch_session", sessionPath = path }, "resuming", function(d)
    if not d.cancelled then
      chat.info.session_file = path
      M.show_history()
    end
  end)
end

--- For the pickers (models.lua): sends and waits for the answer.
function M.request(cmd)
  if not M.ensure() then
    return nil
  end
  local r = process.request(chat.proc, cmd, 10000)
  if not r then
    log.notify("Pi did not answer " .. cmd.type, vim.log.levels.ERROR)
  elseif not r.success then
    log.notify(("%s failed: %s"):format(cmd.type, tostring(r.error)), vim.log.levels.ERROR)
    return nil
  end
  return r
end

function M.set_info(key, value)
  chat.info[key] = value
  M.changed()
end

function M.info()
  return vim.deepcopy(chat.info)
end

--- Ends Pi (the conversation stays on screen); the next prompt starts it again.
function M.stop()
  if process.running(chat.proc) then
    chat.stopping = true
    process.stop(chat.proc, 500)
    chat.stopping = false
  end
  chat.proc, chat.starting = nil, false
  require("pi-ide.features.chat.dialogs").forget()
  view.fail_running()
  set_state("idle")
end

--- Statusline text: "π starting", "π working", "π waiting for you", or "" when idle.
function M.status()
  if chat.state ~= "working" and not require("pi-ide.features.chat.dialogs").waiting() then
    return chat.starting and "π starting" or ""
  end
  local review = package.loaded["pi-ide.features.review"]
  local shown, held = 0, 0
  if review then
    shown, held = review.count() -- held: opens when the user leaves Insert mode
  end
  local reviews = shown + held
  if require("pi-ide.features.chat.dialogs").waiting() or reviews > 0 then
    return "π waiting for you"
  end
  return "π working"
end

function M.running()
  return process.running(chat.proc)
end

-- Neovim quitting ends Pi: no process is left behind.
vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("PiIdeChat", { clear = true }),
  callback = function()
    pcall(M.stop)
  end,
})

return M
