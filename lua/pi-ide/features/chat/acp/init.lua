-- :PiIde chat {agent}: an ACP agent (one whose module in lua/pi-ide/agents/ says how it runs
-- over ACP, or the user's) in a chat window, one chat per agent. The Rust core runs the agent and speaks
-- ACP's framing (src/chat/acp/): every change the agent proposes comes to our review there, and
-- only its other questions reach Lua (handlers.lua). This file is the chat's life: start,
-- initialize, session/new (this Neovim's tools in mcpServers, an asking mode), prompts, cancel.
local log = require("pi-ide.core.log")
local process = require("pi-ide.features.chat.process")
local window = require("pi-ide.features.chat.window")
local agents = require("pi-ide.features.chat.acp.agents")

local M = {}

---@class PiIde.AcpChat
local Chat = {}
Chat.__index = Chat

local chats = {} -- name → chat

-- Modes in which an agent edits without asking: the chat never leaves an agent in one.
local EDITS_WITHOUT_ASKING = {
  auto = true,
  bypassPermissions = true,
  acceptEdits = true,
  dontAsk = true,
  yolo = true,
  ["full-access"] = true,
  autoEdit = true,
  ["auto-edit"] = true,
  ["auto_edit"] = true,
}

local function cfg()
  return require("pi-ide.core.config").values.chat
end

--- The chat of ACP agent `name` (made on first use); nil when no such agent is known.
function M.get(name)
  if chats[name] then
    return chats[name]
  end
  if not agents.get(name) then
    return nil
  end
  local view = require("pi-ide.features.chat.view").of(name, agents.get(name).label)
  -- notes: what the agent must be told with the next prompt (the user edited its change).
  local chat = { name = name, view = view, state = "idle", info = {}, asking = {}, queued = {}, notes = {} }
  chats[name] = setmetatable(chat, Chat)
  return chats[name]
end

--- Every chat made so far.
function M.all()
  return chats
end

function Chat:label()
  return agents.get(self.name).label
end

function Chat:rpc(method, params, cb)
  return process.rpc(self.proc, method, params, cb)
end

--- Something the header or the statusline shows changed.
function Chat:changed()
  if self.prompt_nr then
    window.set_header(self.view.buf(), require("pi-ide.features.chat.acp.header").text(self))
  end
  vim.cmd.redrawstatus({ bang = true })
end

function Chat:set_state(state)
  if self.state ~= state then
    self.state = state
    require("pi-ide.core.events").fire("PiIdeChatState", { state = state, agent = self.name })
    self:changed()
  end
end

-- This Neovim's tools as an MCP server: pi-ide-mcp, told which Neovim to reach, and where its
-- record is (an agent may start MCP servers with a short environment, without this variable).
local function tools_server()
  local program = require("pi-ide.agents.mcp").program()
  local env = vim.env.XDG_RUNTIME_DIR and { { name = "XDG_RUNTIME_DIR", value = vim.env.XDG_RUNTIME_DIR } } or {}
  return program and { name = "nvim", command = program, args = { "--nvim", tostring(vim.fn.getpid()) }, env = env } or nil
end

-- This Neovim's tools for session/new, where the agent takes a stdio server there.
function Chat:mcp_servers()
  local server = tools_server()
  return agents.get(self.name).mcp == "stdio" and server and { server } or {}
end

-- The agent's command line: its own, plus what gives it this Neovim's tools where that is how.
local function command_of(spec)
  local cmd = vim.deepcopy(spec.cmd)
  cmd[1] = spec.native and spec.native(cmd[1]) or cmd[1]
  local server = type(spec.mcp) == "function" and tools_server()
  if server then
    vim.list_extend(cmd, spec.mcp(server))
  end
  return cmd
end

--- Starts the agent when it is not running, and opens its session. True when it runs.
function Chat:ensure()
  if process.running(self.proc) then
    return true
  end
  local spec = agents.get(self.name)
  if vim.fn.executable(spec.cmd[1]) ~= 1 then
    log.notify(("%s: %s not found; install it: %s"):format(spec.label, spec.cmd[1], spec.install), vim.log.levels.ERROR)
    return false
  end
  -- Its changes are reviews of the server's: no server, no chat (nothing could be shown).
  local server = require("pi-ide.core.server")
  if not server.running() and not server.start() then
    log.notify(spec.label .. ": the chat needs the pi-ide server, which could not start (see above)", vim.log.levels.ERROR)
    return false
  end
  local cwd = vim.fn.getcwd()
  local proc, err = process.start({
    cmd = command_of(spec),
    cwd = cwd,
    -- $NVIM: what the agent runs (pi-ide-mcp) finds this Neovim by it.
    env = vim.tbl_extend("force", { NVIM = vim.v.servername }, type(spec.env) == "function" and spec.env() or spec.env),
    tool_lines = cfg().tool_lines,
    acp = { tag = "chat:" .. self.name, label = spec.label .. " (chat)", writes_itself = spec.writes_itself == true },
    on_op = function(op)
      require("pi-ide.features.chat.acp.handlers").handle(self, op)
    end,
  })
  if not proc then
    log.notify(err, vim.log.levels.ERROR)
    return false
  end
  self.proc, self.cwd, self.session, self.starting = proc, cwd, nil, true
  self:initialize()
  self:changed()
  return true
end

function Chat:initialize()
  local params = {
    protocolVersion = 1,
    clientCapabilities = { fs = { readTextFile = true, writeTextFile = true }, terminal = false },
    clientInfo = { name = "pi-ide.nvim", title = "pi-ide.nvim", version = require("pi-ide.core.native").VERSION },
  }
  self:rpc("initialize", params, function(r)
    if not r.success then
      return self:failed("initialize", r.error)
    end
    self.caps = type(r.data) == "table" and r.data.agentCapabilities or {}
    self:new_session()
  end)
end

function Chat:new_session()
  self:rpc("session/new", { cwd = self.cwd, mcpServers = self:mcp_servers() }, function(r)
    if not r.success then
      return self:failed("session/new", r.error)
    end
    self:opened(type(r.data) == "table" and r.data or {})
  end)
end

--- The session is open: its modes and models are known; prompts typed meanwhile go now.
function Chat:opened(d)
  self.session, self.starting = d.sessionId, false
  local modes = type(d.modes) == "table" and d.modes or {}
  self.info.modes, self.info.mode = modes.availableModes, modes.currentModeId
  local models = type(d.models) == "table" and d.models or {}
  self.info.models, self.info.model = models.availableModels, models.currentModelId
  self:ask_mode()
  self:changed()
  local queued = self.queued
  self.queued = {}
  for _, text in ipairs(queued) do
    self:prompt(text)
  end
end

-- An agent that edits without asking is put in a mode that asks; the chat says when it cannot.
function Chat:ask_mode()
  local current = self.info.mode
  if not (current and EDITS_WITHOUT_ASKING[current]) then
    return
  end
  local asking
  for _, m in ipairs(self.info.modes or {}) do
    if type(m) == "table" and not EDITS_WITHOUT_ASKING[m.id] and (asking == nil or m.id == "default") then
      asking = m.id
    end
  end
  if not asking then
    return self.view.banner({ ("> ⚠ %s edits without asking (mode %s) and offers no mode that asks: its changes are NOT reviewed."):format(self:label(), current) })
  end
  self:rpc("session/set_mode", { sessionId = self.session, modeId = asking }, function(r)
    if r.success then
      self.info.mode = asking
      self:changed()
    else
      self.view.banner({ ("> ⚠ %s stays in mode %s (it edits without asking): %s"):format(self:label(), current, tostring(r.error)) })
    end
  end)
end

function Chat:failed(what, err)
  self.starting = false
  local text = tostring(err)
  local spec = agents.get(self.name)
  local hint = text:lower():find("auth") and (" (log in: run %s in a terminal)"):format(spec.login or spec.cmd[1]) or ""
  self.view.lines({ ("✗ %s: %s failed: %s%s"):format(self:label(), what, text, hint) })
  self:set_state("idle")
  self:changed()
end

function Chat:prompt(text)
  self:set_state("working")
  local prompt = require("pi-ide.features.chat.acp.context").blocks(text, self.cwd)
  -- What the user undid of the agent's own writes since (chat/undone.lua) goes with the notes.
  local undone = require("pi-ide.features.chat.undone")
  undone.watch()
  local note, noted = undone.note(self.name)
  if note then
    table.insert(self.notes, note)
    undone.told(self.name, noted)
    self.view.lines({ ("↺ %s is told: %s"):format(self:label(), note) })
  end
  for _, note_text in ipairs(self.notes) do
    table.insert(prompt, { type = "text", text = "(Note from the editor: " .. note_text .. ")" })
  end
  self.notes = {}
  -- The turn starts after its checkpoint (features/checkpoints/).
  require("pi-ide.features.checkpoints").before_turn(self.name, text, function()
    self:rpc("session/prompt", { sessionId = self.session, prompt = prompt }, function(r)
      require("pi-ide.features.chat.acp.handlers").turn_ended(self, r)
    end)
  end, function()
    return self.state == "working"
  end)
end

--- Sends a prompt (starting the agent); typed before the session is open, it waits for it.
function Chat:send(text)
  if not text or vim.trim(text) == "" or not self:ensure() then
    return false
  end
  self.view.user(text, nil, self:label())
  if self.session then
    self:prompt(text)
  else
    table.insert(self.queued, text)
    self:set_state("working")
  end
  return true
end

--- Stops the turn: every question answered `cancelled` and the reviews closed, then
--- session/cancel. In that order: an agent may apply an allow that reaches it after the cancel,
--- so none can follow it (a question answered is never answered again).
function Chat:abort()
  if not process.running(self.proc) then
    return log.notify(self:label() .. " is not running in the chat", vim.log.levels.INFO)
  end
  process.cancel(self.proc)
  for key in pairs(self.asking) do
    process.answer(self.proc, key, { outcome = { outcome = "cancelled" } })
  end
  if self.session then
    process.notify(self.proc, { jsonrpc = "2.0", method = "session/cancel", params = { sessionId = self.session } })
  end
  self.asking = {}
  self.queued = {}
  self:changed()
end

--- Ends the agent (the conversation stays); the next prompt starts it again.
function Chat:stop()
  if process.running(self.proc) then
    self.stopping = true
    process.stop(self.proc, 500)
    self.stopping = false
  end
  self.proc, self.session, self.starting, self.asking, self.queued = nil, nil, false, {}, {}
  self.view.fail_running()
  self:set_state("idle")
end

function Chat:running()
  return process.running(self.proc)
end

--- Statusline text: "<agent> starting|working|waiting for you", or "" when idle.
function Chat:status()
  local label = self:label()
  if next(self.asking) then
    return label .. " waiting for you"
  end
  if self.state ~= "working" then
    return self.starting and (label .. " starting") or ""
  end
  local review = package.loaded["pi-ide.features.review"]
  local shown, held = 0, 0
  if review then
    shown, held = review.count()
  end
  return label .. (shown + held > 0 and " waiting for you" or " working")
end

require("pi-ide.features.chat.acp.view").extend(Chat)

-- Neovim quitting ends every agent: no process is left behind.
vim.api.nvim_create_autocmd("VimLeavePre", {
  group = vim.api.nvim_create_augroup("PiIdeAcpChat", { clear = true }),
  callback = function()
    for _, chat in pairs(chats) do
      pcall(chat.stop, chat)
    end
  end,
})

return M
