-- The server's life on the Neovim side: start the Rust core with a libuv async handle it wakes
-- us with, drain its events on the main loop, keep the lockfile's folders current, and stop in
-- order on :PiIde stop and VimLeavePre.
local config = require("pi-ide.core.config")
local log = require("pi-ide.core.log")
-- The agents and the features it hands events to, by the part they play (lua/pi-ide/wiring.lua).
local parts = require("pi-ide.core.parts")

local M = {}

local state = {
  native = nil,
  async = nil, -- the uv_async_t the Rust core wakes us through
  info = nil, -- { port, lockfile }
  augroup = nil,
}

local user_event = require("pi-ide.core.events").fire

-- Calls the core answered while a client's connection was closing (see `abandoned` events),
-- reported again with its disconnect.
local answered_on_close = {} -- client -> { req, ... }

-- The clients themselves live in the core (native.status(), native.agent()); these events only
-- tell the user.
local function on_client_event(ev)
  if ev.kind == "client_connected" then
    log.debug("client %d connected", ev.client)
  elseif ev.kind == "client_initialized" then
    log.info("client %d is %s %s", ev.client, tostring(ev.name), tostring(ev.version))
    -- Its first selection_changed went out with the handshake (the last known state); make sure
    -- it is current.
    parts.get("selection").flush()
    vim.notify(("pi-ide.nvim: %s connected"):format(ev.name and (ev.name .. " " .. (ev.version or "")) or "an agent"), vim.log.levels.INFO)
    user_event("PiIdeClientConnected", { client = ev.client, name = ev.name, version = ev.version })
  elseif ev.kind == "session_named" then
    log.info("client %d names its session %q", ev.client, ev.name)
    parts.get("review").refresh()
    vim.cmd.redrawstatus({ bang = true })
    user_event("PiIdeSessionNamed", { client = ev.client, name = ev.name })
  elseif ev.kind == "client_disconnected" then
    log.info("client %d disconnected", ev.client)
    if ev.reason then
      vim.notify(("pi-ide.nvim: closed the connection of %s: %s"):format(ev.name or "an agent", ev.reason), vim.log.levels.WARN)
    elseif ev.name then
      vim.notify(("pi-ide.nvim: %s disconnected"):format(ev.name), vim.log.levels.INFO)
    end
    local abandoned = vim.list_extend(answered_on_close[ev.client] or {}, ev.abandoned)
    answered_on_close[ev.client] = nil
    user_event("PiIdeClientDisconnected", { client = ev.client, name = ev.name, abandoned = abandoned, reason = ev.reason })
  end
end

-- An agent asked something after a quiet time: the start of its turn (checkpoints).
local function agent_asked(client)
  -- Named as the user knows it (an agent served another's wire by its own name).
  local clients = require("pi-ide.core.clients")
  local kind = clients.kind_of(client)
  parts.get("checkpoints").activity(clients.agent_name(client) or (kind and kind.name) or "agent")
end

-- A review to show: however showing it fails, the review's failed() rejects it.
local function on_review(ev)
  local review = parts.get("review")
  local ok, err = xpcall(review.open, debug.traceback, ev)
  if not ok then
    review.failed({ req = ev.req, path = ev.path }, err)
  end
end

-- Runs on the main loop (scheduled): handles one batch. If more events wait, the core wakes us
-- again, so typing gets a turn between batches.
local function process()
  local native = state.native
  if not native then
    return
  end
  local events = native.drain()
  for _, ev in ipairs(events) do
    local ok, err = xpcall(function()
      if ev.kind == "tool_call" then
        parts.get("tools").dispatch(native, ev)
      elseif ev.kind == "selection_due" then
        parts.get("selection").flush()
      elseif ev.kind == "response" then
        require("pi-ide.core.requests").resolve(ev)
      elseif ev.kind == "agent_active" then
        agent_asked(ev.client)
      elseif ev.kind == "review_opened" then
        on_review(ev)
      elseif ev.kind == "review_stats" then
        parts.get("review").set_stats(ev.req, ev.stats)
      elseif ev.kind == "review_ended" then
        parts.get("review").ended_by_core(ev)
      elseif ev.kind == "notice" then
        require("pi-ide.core.notices").show(ev)
      elseif ev.kind == "abandoned" then
        answered_on_close[ev.client] = vim.list_extend(answered_on_close[ev.client] or {}, ev.reqs)
      else
        on_client_event(ev)
      end
    end, debug.traceback)
    if not ok then
      log.error("handling %s failed: %s", tostring(ev.kind), tostring(err))
    end
  end
end

-- A function that runs `fn` on the main loop once however often it is called before then. Safe
-- from a fast context (the async callback, where no API call is allowed).
local scheduled_once = require("pi-ide.core.schedule").once

local on_wake = scheduled_once(process)

local function update_folders()
  if state.native and state.info then
    local ok, err = pcall(state.native.set_workspace_folders, require("pi-ide.core.workspace").folders())
    if not ok then
      log.notify(tostring(err), vim.log.levels.WARN)
    end
  end
end

local schedule_folders = scheduled_once(update_folders)

function M.running()
  return state.info ~= nil
end

--- The name of the agent that initialized last (the one suggestions go to), if any. The core
--- decides which one that is (requests go there); this only asks.
function M.agent_name()
  local agent = state.info and state.native and state.native.agent()
  return agent and agent.name or nil
end

-- Options the server reads only when it starts (what it listens on, its lockfiles, its bounds;
-- and the agents' own, which say whom it serves).
local START_OPTIONS = { "max_message_size", "ide_name", "diagnostics_timeout_ms", "selection_debounce_ms" }

--- setup() changed options while running: the ones read at start take effect by a restart,
--- done now when no agent is connected and no review is open (nothing is lost), else on the
--- user's word.
function M.apply_start_options(before)
  local read_at_start = vim.list_extend(vim.deepcopy(START_OPTIONS), parts.get("agents").start_options())
  local changed = vim.tbl_filter(function(k)
    return not vim.deep_equal(before[k], config.values[k])
  end, read_at_start)
  if #changed == 0 then
    return
  end
  local busy = #M.status().clients > 0 or #parts.get("review").list() > 0
  if busy then
    log.notify(
      ("%s take effect when the server restarts (:PiIde stop, then :PiIde start); agents are connected now"):format(table.concat(changed, ", ")),
      vim.log.levels.WARN
    )
    return
  end
  M.stop()
  M.start()
end

--- Tells the running core the options it acts on by itself (setup() after start).
function M.configure()
  if state.info and state.native then
    local cp = config.values.checkpoints
    state.native.configure({ review_enabled = config.values.review.enabled, turn_quiet_ms = cp.enabled and cp.idle_ms or nil })
  end
end

-- The parts that watch the editor while the server runs: attach(native) at its start, detach()
-- at its stop.
local WATCHERS = { "selection", "diagnostics", "suggestions", "pending" }

--- Starts the server. Returns true, or false after telling the user why not.
function M.start()
  if state.info then
    return true
  end
  local native, err, told = require("pi-ide.core.native").load()
  if not native then
    if not told then
      log.notify(err, vim.log.levels.ERROR)
    end
    return false
  end
  state.native = native
  log.set_level(config.values.log_level)

  local async = vim.uv.new_async(on_wake)
  local name = config.ide_name()
  local ok, info = pcall(native.start, {
    ide_name = name,
    workspace_folders = require("pi-ide.core.workspace").folders(),
    max_message_size = config.values.max_message_size,
    diagnostics_timeout_ms = config.values.diagnostics_timeout_ms,
    selection_debounce_ms = config.values.selection_debounce_ms,
    serve = parts.get("agents").served_at_start(config.values),
    review_enabled = config.values.review.enabled,
    turn_quiet_ms = config.values.checkpoints.enabled and config.values.checkpoints.idle_ms or nil,
    run_dir = vim.fn.stdpath("run"),
    own_names = { "Neovim", name },
  }, async)
  if not ok then
    async:close()
    log.notify("cannot start the server: " .. tostring(info), vim.log.levels.ERROR)
    return false
  end
  state.async, state.info = async, info
  log.info("server started on port %d (%s)", info.port, info.lockfile)
  -- An agent whose folder was refused is left out; said once, as each start is.
  for name, why in pairs(info.refused or {}) do
    local label = parts.get("agents").get(name).label:gsub("^The ", "the ")
    log.notify(("not serving %s: %s"):format(label, why), vim.log.levels.WARN)
  end

  state.augroup = vim.api.nvim_create_augroup("PiIdeServer", { clear = true })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = state.augroup,
    callback = log.guard("stopping on quit", function()
      M.stop()
    end),
  })
  vim.api.nvim_create_autocmd({ "DirChanged", "LspAttach", "LspDetach" }, {
    group = state.augroup,
    callback = log.guard("workspace folders", schedule_folders),
  })
  -- An agent that picks among Neovims takes the one focused last (its record says when).
  vim.api.nvim_create_autocmd("FocusGained", {
    group = state.augroup,
    callback = log.guard("focus", function()
      pcall(native.focused)
    end),
  })
  for _, part in ipairs(WATCHERS) do
    parts.get(part).attach(native)
  end
  require("pi-ide.core.typing").attach()
  user_event("PiIdeStarted", { port = info.port, lockfile = info.lockfile })
  return true
end

--- Stops the server: every parked call is answered, clients get a Close frame, the lockfile
--- is removed. Returns false when it was not running.
function M.stop()
  if not state.info then
    return false
  end
  local native = state.native
  -- Handle what already arrived, so nothing that reached us goes unanswered by Lua; then
  -- reject open reviews while their agents are still connected to hear it.
  pcall(process)
  local ok_reject, reject_err = pcall(function()
    parts.get("review").reject_all()
  end)
  if not ok_reject then
    log.error("rejecting open reviews failed: %s", tostring(reject_err))
  end
  for _, part in ipairs(WATCHERS) do
    parts.get(part).detach()
  end
  require("pi-ide.core.typing").detach()
  local ok, err = pcall(native.stop)
  if not ok then
    log.error("stop failed: %s", tostring(err))
  end
  -- The core has detached the handle: closing it now cannot race a wake.
  if state.async and not state.async:is_closing() then
    state.async:close()
  end
  require("pi-ide.core.requests").reset()
  local info = state.info
  state.async, state.info = nil, nil
  pcall(vim.api.nvim_del_augroup_by_id, state.augroup)
  log.info("server stopped")
  user_event("PiIdeStopped", { port = info.port })
  return true
end

--- A snapshot for :PiIde status and the health check.
function M.status()
  if not state.info or not state.native then
    return { running = false }
  end
  local st = state.native.status()
  st.refused = state.info.refused
  for agent, paths in pairs(st.served or {}) do
    for what, path in pairs(paths) do
      st[agent .. "_" .. what] = path
    end
  end
  return st
end

return M
