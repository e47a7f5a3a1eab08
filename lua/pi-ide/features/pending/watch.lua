-- The workspace's watch (src/watch/, through the checkpoint worker) for pending changes
-- (init.lua): on while an agent is connected or running (a chat that has worked, a terminal
-- :PiIde open started, a connected client), off two seconds after the last of them is gone.
local checkpoints = require("pi-ide.features.checkpoints")

local M = {}

local state = {
  holders = {}, -- "client:N", "terminal:name", "chat:name" -> the agent's name: who keeps it on
  watching = nil, -- { folder, job, folders, setup_ms, gave_up } while it is on
  told = {}, -- reason -> true: said once
  on = nil, -- { batch = fn(folder, r), started = fn(folder), stopped = fn() } (init.lua)
}

local function once(reason, msg)
  if not state.told[reason] then
    state.told[reason] = true
    vim.notify("pi-ide.nvim: " .. msg, vim.log.levels.WARN)
  end
end

--- What :checkhealth and :PiIde status say of the watch.
function M.health()
  local w = state.watching
  if not w then
    return "not watching (no agent connected or running)"
  elseif not w.folders then
    return "starting: the workspace's snapshot is being taken"
  elseif w.gave_up then
    return "gave up: " .. w.gave_up .. "; changes are found at each turn's end"
  end
  return ("watching %s (%s folders, set up in %s ms)"):format(vim.fn.fnamemodify(w.folder, ":~"), w.folders or "?", w.setup_ms or "?")
end

--- The folder watched, if the watch is on.
function M.folder()
  return state.watching and state.watching.folder
end

--- The names of the agents keeping it on, each once, sorted.
function M.names()
  local names, seen = {}, {}
  for _, name in pairs(state.holders) do
    if not seen[name] then
      seen[name] = true
      table.insert(names, name)
    end
  end
  table.sort(names)
  return names
end

--- Starts the watch of the folder (once), if checkpoints are on.
function M.ensure()
  if state.watching or not require("pi-ide.core.config").values.checkpoints.enabled then
    return
  end
  local folder = checkpoints.folder()
  state.watching = { folder = folder }
  state.on.started(folder)
  state.watching.job = checkpoints.stream({ op = "watch", folder = folder }, function(ok, r)
    if not ok then
      return once("watch", "cannot watch the workspace for agents' writes: " .. tostring(r))
    elseif r.watch then
      state.watching.folders, state.watching.setup_ms, state.watching.gave_up = r.folders, r.setup_ms, r.gave_up
      if r.gave_up then
        once("gave_up", ("not watching for agents' writes: %s; see :checkhealth pi-ide"):format(r.gave_up))
      end
      return
    end
    state.on.batch(folder, r)
  end)
end

local function unwatch()
  local w = state.watching
  if w and next(state.holders) == nil then
    state.watching = nil
    state.on.stopped()
    checkpoints.unstream(w.job)
    checkpoints.run({ op = "unwatch", folder = w.folder }, function() end)
  end
end

--- `who` ("client:3", "terminal:codex", "chat:pi") is connected or running, or is no more;
--- `name`: the agent's, when `who` does not say it.
function M.hold(who, on, name)
  state.holders[who] = on and (name or (who:gsub("^%w+:", ""))) or nil
  if on then
    M.ensure()
  else
    vim.defer_fn(unwatch, 2000) -- its last writes still land
  end
end

--- What it hands over: `on.batch(folder, r)` each batch, `on.started(folder)`, `on.stopped()`.
function M.setup(on)
  state.on = on
end

return M
