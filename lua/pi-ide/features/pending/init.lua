-- Pending changes: what an agent wrote by itself, no review asked (an accept-edits or yolo
-- mode, an agent's own patches, `review.when = "after"`), shown the moment it lands and
-- decided hunk by hunk (view.lua draws it in the file's window, decide.lua keeps or undoes).
-- While an agent is connected or running, the core watches the workspace (src/watch/) and
-- judges each write against the snapshot taken before it (checkpoint/landed.rs): the turn's
-- checkpoint, or the one taken when the watch began. A write this Neovim made (`:w`, a decision
-- here) or one an accepted review produced is not pending. Undecided changes are kept across a
-- restart (store.lua).
local log = require("pi-ide.core.log")
local checkpoints = require("pi-ide.features.checkpoints")
local text = require("pi-ide.features.pending.text")

local M = {}

local state = {
  entries = {}, -- absolute path -> entry (see M.list)
  order = {}, -- paths in the order they became pending
  own = {}, -- absolute path -> blob id Neovim last wrote there
  own_text = {}, -- absolute path -> the text the user last wrote there, while watching
  accepted = {}, -- absolute path -> blob id an accepted review showed
  expected = {}, -- absolute path -> { agent, base, blob, until_ms }: review.when = "after"
  holders = {}, -- "client:N", "terminal:name", "chat" -> true: who keeps the watch on
  watching = nil, -- { folder, job } while the watch is on
  told = {}, -- reason -> true: said once
  over = 0, -- changes past the cap in the last storm
}

local function now()
  return vim.uv.now()
end

local function say(msg, level)
  vim.notify("pi-ide.nvim: " .. msg, level or vim.log.levels.INFO)
end

--- The pending changes: { path, agent, turn, hunks, kind } each, oldest first.
function M.list()
  local out = {}
  for _, p in ipairs(state.order) do
    local e = state.entries[p]
    if e then
      table.insert(out, { path = p, agent = e.agent, turn = e.turn, hunks = e.hunks, kind = e.kind })
    end
  end
  return out
end

--- The entry of `path` (absolute), if it is pending.
function M.entry(path)
  return path and state.entries[vim.fs.normalize(path)]
end

local function redraw_status()
  pcall(vim.cmd.redrawstatus, { bang = true })
end

-- Stores the entries and redraws the statusline, once per batch while one is taken (`held`):
-- per change, a storm's 200 would write every entry's baseline 200 times over.
local held, dirty = false, false
local function stored()
  if held then
    dirty = true
    return
  end
  require("pi-ide.features.pending.store").save(state.watching and state.watching.folder or checkpoints.folder(), state.entries)
  redraw_status()
end

-- Runs `fn` with the store held, then stores once if anything changed.
local function batched(fn)
  held, dirty = true, false
  local ok, err = pcall(fn)
  held = false
  if dirty then
    stored()
  end
  if not ok then
    error(err, 0)
  end
end

--- What the statusline says: "⚠ 2 changes to review: :PiIde changes", or "".
function M.status()
  local n = #M.list()
  if n == 0 then
    return ""
  end
  return ("⚠ %d change%s to review: :PiIde changes"):format(n, n == 1 and "" or "s")
end

-- The agent whose turn is open, or the ones that may have written (two: both named).
local function agent_now()
  local open = checkpoints.open_turn()
  if open then
    return open.agent, open.n
  end
  local names = {}
  for h in pairs(state.holders) do
    table.insert(names, (h:gsub("^%w+:", "")))
  end
  table.sort(names)
  return #names > 0 and table.concat(names, " or ") or "an agent", nil
end

-- Counts the entry's hunks; a change whose lines cannot be shown counts as one.
local function count(e)
  if e.not_diffed or e.base == nil or e.text == nil or (e.kind == "created" and e.text == "") then
    e.hunks = 1
  else
    e.hunks = #text.hunks(e.base, e.text)
  end
  return e.hunks
end

--- Drops `path`'s entry (decided, or back to its baseline).
function M.forget(path)
  if state.entries[path] then
    state.entries[path] = nil
    require("pi-ide.features.pending.view").clear(path)
    stored()
  end
end

--- The entry changed (a decision, a new write): counted, drawn, stored, told.
function M.changed(path, e, quiet)
  if e.kind ~= "deleted" and e.base_blob == e.blob and e.blob ~= nil then
    return M.forget(path)
  end
  if count(e) == 0 then
    return M.forget(path)
  end
  if not state.entries[path] then
    table.insert(state.order, path)
  end
  state.entries[path] = e
  require("pi-ide.features.pending.view").show(path, e)
  stored()
  if not quiet then
    require("pi-ide.core.events").fire("PiIdeChangePending", { path = path, agent = e.agent, turn = e.turn, hunks = e.hunks })
  end
end

-- One line for the batch: the file and the agent, or how many.
local function tell(new, over)
  if #new == 0 and over == 0 then
    return
  end
  local first = state.entries[new[1]]
  local what = #new == 1 and vim.fn.fnamemodify(new[1], ":~:.") or ("%d files"):format(#new)
  local by = first and first.agent or "an agent"
  local more = over > 0 and (" (+%d more not shown)"):format(over) or ""
  local msg = ("%s changed %s%s: ]h to go, :PiIde changes to list"):format(by, what, more)
  say(msg:sub(1, math.max(20, vim.v.echospace - 13)))
end

-- Whether Neovim (or a review the user accepted) wrote `path` with this blob: never pending.
local function ours(path, l)
  if l.blob ~= nil and (state.own[path] == l.blob or state.accepted[path] == l.blob) then
    return true
  end
end

-- A change that landed, as the core judged it (landed.rs), turned into an entry.
local function take(folder, l, new)
  local path = folder .. "/" .. l.path
  local e, exp = state.entries[path], state.expected[path]
  if exp and exp.until_ms < now() then
    state.expected[path], exp = nil, nil
  end
  if ours(path, l) and not exp then
    if e then
      e.text, e.blob = l.text, l.blob
      M.changed(path, e, true)
    end
    return
  end
  local agent, turn = agent_now()
  if exp then
    agent, state.expected[path] = exp.agent, nil
  end
  local base, base_blob = l.base, l.base_blob
  if e then
    base, base_blob, agent, turn = e.base, e.base_blob, e.agent, e.turn
  elseif exp then
    base, base_blob = exp.base, exp.blob
  elseif state.own_text[path] then
    -- The user saved it since the snapshot: undoing the agent's change keeps their save.
    base, base_blob = state.own_text[path], state.own[path]
  end
  local kind = l.kind
  if base_blob == nil and l.kind ~= "deleted" and not l.no_base then
    kind, base = "created", base or ""
  end
  local entry = { agent = agent, turn = turn, kind = kind, base = base, base_blob = base_blob, text = l.text, blob = l.blob, not_diffed = l.not_diffed or (l.no_base and "no snapshot before it") or nil }
  local was = e ~= nil
  M.changed(path, entry)
  if state.entries[path] and not was then
    table.insert(new, path)
  end
end

-- A batch the watch saw settle.
local function landed(folder, r)
  local new = {}
  batched(function()
    for _, l in ipairs(r.landed or {}) do
      local ok, err = xpcall(take, debug.traceback, folder, l, new)
      if not ok then
        log.error("pending: %s", tostring(err))
      end
    end
  end)
  tell(new, r.more or 0)
end

local function once(reason, msg)
  if not state.told[reason] then
    state.told[reason] = true
    say(msg, vim.log.levels.WARN)
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

-- Starts the watch of the folder (once), if checkpoints are on.
local function watch()
  local cfg = require("pi-ide.core.config").values
  if state.watching or not cfg.checkpoints.enabled or cfg.pending == false then
    return
  end
  local folder = checkpoints.folder()
  state.watching = { folder = folder }
  require("pi-ide.features.pending.store").load(folder, M)
  state.watching.job = checkpoints.stream({ op = "watch", folder = folder }, function(ok, r)
    if not ok then
      once("watch", "cannot watch the workspace for agents' writes: " .. tostring(r))
      return
    elseif r.watch then
      state.watching.folders, state.watching.setup_ms, state.watching.gave_up = r.folders, r.setup_ms, r.gave_up
      if r.gave_up then
        once("gave_up", ("not watching for agents' writes: %s; see :checkhealth pi-ide"):format(r.gave_up))
      end
      return
    end
    landed(folder, r)
  end)
end

local function unwatch()
  local w = state.watching
  if w and next(state.holders) == nil then
    state.watching = nil
    checkpoints.unstream(w.job)
    checkpoints.run({ op = "unwatch", folder = w.folder }, function() end)
  end
end

--- `who` ("client:3", "terminal:codex", "chat") is connected or running, or is no more.
function M.hold(who, on)
  state.holders[who] = on or nil
  if on then
    watch()
  else
    vim.defer_fn(unwatch, 2000) -- its last writes still land
  end
end

--- The next change of `path` within 10 s is `agent`'s, even one Neovim writes (review.when =
--- "after": the review was answered as accepted, unseen). Its baseline: the file now.
function M.expect(path, agent)
  path = vim.fs.normalize(path)
  local native = require("pi-ide.core.native").get()
  local f = io.open(path, "rb")
  local base = f and f:read("*a")
  if f then
    f:close()
  end
  local blob = base and native and native.blob_of_file(path, 64 * 1024 * 1024) or nil
  state.expected[path] = { agent = agent, base = base, blob = blob, until_ms = now() + 10000 }
  watch()
end

-- Neovim wrote a file: not pending; the user's :w of a pending file keeps what it shows.
local function on_write(ev)
  local path = vim.fs.normalize(vim.fn.fnamemodify(ev.match ~= "" and ev.match or vim.api.nvim_buf_get_name(ev.buf), ":p"))
  local native = require("pi-ide.core.native").get()
  state.own[path] = native and native.blob_of_file(path, 64 * 1024 * 1024) or nil
  if state.watching and state.own[path] then
    local f = io.open(path, "rb")
    state.own_text[path] = f and f:read("*a") or nil
    if f then
      f:close()
    end
  end
  if state.entries[path] and not state.expected[path] then
    M.forget(path)
    say(("kept the change of %s: you wrote it"):format(vim.fn.fnamemodify(path, ":~:.")))
  end
end

--- Neovim is about to write `path` with blob `blob` itself (a decision here).
function M.own(path, blob)
  state.own[path] = blob
end

-- An accepted review: the write that follows is the review's.
local function on_review_closed(ev)
  local d = ev.data or {}
  if d.result == "accepted" and d.path and type(d.blob) == "string" then
    state.accepted[vim.fs.normalize(d.path)] = d.blob
  end
end

--- Restores an entry kept from an earlier session (store.lua).
function M.restore(path, e)
  if not state.entries[path] then
    M.changed(path, e, true)
  end
end

local group
--- Attached while the server runs (core/server.lua): who keeps the watch on, Neovim's writes.
function M.attach()
  group = vim.api.nvim_create_augroup("PiIdePending", { clear = true })
  local function on(pattern, cb)
    vim.api.nvim_create_autocmd("User", { group = group, pattern = pattern, callback = function(ev)
      cb(ev.data or {})
    end })
  end
  on("PiIdeClientConnected", function(d) M.hold("client:" .. tostring(d.name or d.client), true) end)
  on("PiIdeClientDisconnected", function(d) M.hold("client:" .. tostring(d.name or d.client), false) end)
  on("PiIdeAgentStarted", function(d) M.hold("terminal:" .. tostring(d.agent), true) end)
  on("PiIdeAgentExited", function(d) M.hold("terminal:" .. tostring(d.agent), false) end)
  on("PiIdeChatState", function(d) M.hold("chat:" .. tostring(d.agent or "pi"), true) end)
  on("PiIdeReviewClosed", function(d) on_review_closed({ data = d }) end)
  vim.api.nvim_create_autocmd("BufWritePost", { group = group, callback = on_write })
  require("pi-ide.features.pending.view").attach(group)
end

function M.detach() end

--- Its line in :PiIde status.
function M.status_lines()
  local n = #M.list()
  return { ("  pending: %d change%s; %s"):format(n, n == 1 and "" or "s", M.health()) }
end

return M
