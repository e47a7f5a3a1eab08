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
local watch = require("pi-ide.features.pending.watch")

local M = {}

local state = {
  entries = {}, -- absolute path -> entry (see M.list)
  order = {}, -- paths in the order they became pending
  own = {}, -- absolute path -> blob id Neovim last wrote there
  own_text = {}, -- absolute path -> the text the user last wrote there, while watching
  accepted = {}, -- absolute path -> blob id an accepted review showed
  expected = {}, -- absolute path -> { agent, base, blob, until_ms }: review.when = "after"
  over = 0, -- changes past the cap in the last storm
}

--- Changes tracked at most: past it (a build, `npm install` outside the ignored folders), the
--- rest are counted and left to :PiIde changes (the turn's own list has them all).
M.MAX = 200

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

-- Stores the entries once this batch of changes is handled (a storm saves once, not per file).
local function save_soon()
  if not state.saving then
    state.saving = true
    vim.schedule(function()
      state.saving = false
      require("pi-ide.features.pending.store").save(watch.folder() or checkpoints.folder(), state.entries)
    end)
  end
end

local function redraw_status()
  pcall(vim.cmd.redrawstatus, { bang = true })
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
  -- A write lands ~100 ms after it is made: one just after a chat's turn ended is that turn's.
  local open = checkpoints.open_turn(2000)
  if open then
    return open.agent, open.n
  end
  local names = watch.names()
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

-- What the file is known to hold, as the user saw or decided it: the baseline of the agent's
-- next write to it (`text` false: no file), instead of an older snapshot's.
local function known(path, text, blob)
  state.own_text[path], state.own[path] = text, blob
end

--- Drops `path`'s entry (decided, or back to its baseline); `text`, `blob`: what the file holds
--- now it is decided (false: no file).
function M.forget(path, text, blob)
  if text ~= nil then
    known(path, text, blob)
  end
  if state.entries[path] then
    state.entries[path] = nil
    state.order = vim.tbl_filter(function(p)
      return p ~= path
    end, state.order)
    require("pi-ide.features.pending.view").clear(path)
    save_soon()
    redraw_status()
  end
end

--- The entry changed (a decision, a new write): counted, drawn, stored, told.
function M.changed(path, e, quiet)
  if (e.kind ~= "deleted" and e.base_blob == e.blob and e.blob ~= nil) or count(e) == 0 then
    return M.forget(path, e.text or false, e.blob)
  end
  if not state.entries[path] then
    table.insert(state.order, path)
  end
  state.entries[path] = e
  require("pi-ide.features.pending.view").show(path, e)
  save_soon()
  redraw_status()
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
  local by = first and first.agent or agent_now()
  local more = over > 0 and (" (+%d more)"):format(over) or ""
  local tail = " · :PiIde changes"
  local what = ("%d files"):format(#new)
  if #new == 1 then
    -- One line at any width: a long name loses its start, never the rest.
    what = vim.fn.fnamemodify(new[1], ":~:.")
    local room = math.max(12, vim.v.echospace - 13 - vim.fn.strchars(by .. " changed " .. more .. tail))
    if vim.fn.strchars(what) > room then
      what = "…" .. vim.fn.strcharpart(what, vim.fn.strchars(what) - room + 1)
    end
  end
  say(("%s changed %s%s%s"):format(by, what, more, tail))
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
  if l.kind == "gone" then
    -- A temporary file (an agent's atomic write) reported while it was there: gone again.
    return e and e.kind == "created" and M.forget(path, false, nil)
  end
  if exp and exp.until_ms < now() then
    state.expected[path], exp = nil, nil
  end
  if ours(path, l) and not exp then
    if e then
      e.text, e.blob = l.text, l.blob
      M.changed(path, e, true)
    elseif l.text then
      known(path, l.text, l.blob) -- an accepted review's write: what the user saw
    end
    return
  end
  if not e and #state.order >= M.MAX then
    new.over = (new.over or 0) + 1
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
  elseif state.own_text[path] ~= nil then
    -- The user saved it, or decided it, since the snapshot: undoing the agent's change keeps that.
    base, base_blob = state.own_text[path] or nil, state.own_text[path] and state.own[path] or nil
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

-- Changes that landed with no turn open begin one, named as their agent: what it writes next
-- is in that turn (its checkpoint is taken now, with these changes in it: they stay pending).
local function open_turn_for(new)
  local first = state.entries[new[1] or ""]
  if not first or first.turn or checkpoints.open_turn() or first.agent:find(" or ", 1, true) then
    return
  end
  checkpoints.activity(first.agent, function()
    local open = checkpoints.open_turn()
    for _, p in ipairs(new) do
      if open and state.entries[p] and not state.entries[p].turn then
        state.entries[p].turn = open.n
      end
    end
  end)
end

-- Batches waiting to be taken in: a storm's 200 changes are taken CHUNK at a time, the loop
-- free between (typing is never held for a whole batch); batches keep their order.
local CHUNK = 25
local queue = {}

local function drain_queue()
  local budget = CHUNK
  while budget > 0 and queue[1] do
    local b = queue[1]
    while budget > 0 and b.at <= #b.items do
      local ok, err = xpcall(take, debug.traceback, b.folder, b.items[b.at], b.new)
      if not ok then
        log.error("pending: %s", tostring(err))
      end
      b.at, budget = b.at + 1, budget - 1
    end
    if b.at > #b.items then
      table.remove(queue, 1)
      tell(b.new, b.more + (b.new.over or 0))
      open_turn_for(b.new)
    end
  end
  if queue[1] then
    vim.defer_fn(drain_queue, 0)
  end
end

-- A batch the watch saw settle.
local function landed(folder, r)
  table.insert(queue, { folder = folder, items = r.landed or {}, at = 1, new = {}, more = r.more or 0 })
  if #queue == 1 then
    drain_queue()
  end
end

--- The next change of `path` within 10 s is `agent`'s, even one Neovim writes (review.when =
--- "after": the review was answered as accepted, unseen). Its baseline: the file now.
function M.expect(path, agent)
  path = vim.fs.normalize(path)
  local native = require("pi-ide.core.native").get()
  local base = require("pi-ide.features.pending.store").read(path)
  local blob = base and native and native.blob_of_file(path, 64 * 1024 * 1024) or nil
  state.expected[path] = { agent = agent, base = base, blob = blob, until_ms = now() + 10000 }
  watch.ensure()
end

-- Neovim wrote a file: not pending; the user's :w of a pending file keeps what it shows.
local function on_write(ev)
  local path = vim.fs.normalize(vim.fn.fnamemodify(ev.match ~= "" and ev.match or vim.api.nvim_buf_get_name(ev.buf), ":p"))
  local native = require("pi-ide.core.native").get()
  state.own[path] = native and native.blob_of_file(path, 64 * 1024 * 1024) or nil
  if watch.folder() and state.own[path] then
    state.own_text[path] = require("pi-ide.features.pending.store").read(path)
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

-- The agent a client is, by its name here (not its client's, "<agent>-mcp-client"): the one it
-- came as, or the one speaking that one's wire (`served_as`) whose name its client's holds, so
-- that a launched agent and its connection are one agent.
-- A connected client's agent, as the user names it (core/clients.lua).
local function client_agent(d)
  return require("pi-ide.core.clients").agent_name(d.client) or d.name or "an agent"
end

--- The changes of `folder` left undecided by an earlier session, once.
function M.load(folder)
  if not state.loaded and require("pi-ide.core.config").values.checkpoints.enabled then
    state.loaded = true
    require("pi-ide.features.pending.store").load(folder, M)
  end
end

--- What :checkhealth and :PiIde status say of the watch (watch.lua).
M.health = watch.health

local group
--- Attached while the server runs (core/server.lua): who keeps the watch on, Neovim's writes.
function M.attach()
  group = vim.api.nvim_create_augroup("PiIdePending", { clear = true })
  watch.setup({
    batch = landed,
    started = M.load,
    stopped = function()
      state.own_text = {}
    end,
  })
  local function on(pattern, cb)
    vim.api.nvim_create_autocmd("User", { group = group, pattern = pattern, callback = function(ev)
      cb(ev.data or {})
    end })
  end
  on("PiIdeClientConnected", function(d) watch.hold("client:" .. tostring(d.client), true, client_agent(d)) end)
  on("PiIdeClientDisconnected", function(d) watch.hold("client:" .. tostring(d.client), false) end)
  on("PiIdeAgentStarted", function(d) watch.hold("terminal:" .. tostring(d.agent), true) end)
  on("PiIdeAgentExited", function(d) watch.hold("terminal:" .. tostring(d.agent), false) end)
  on("PiIdeChatState", function(d) watch.hold("chat:" .. tostring(d.agent or "pi"), true) end)
  on("PiIdeReviewClosed", function(d) on_review_closed({ data = d }) end)
  vim.api.nvim_create_autocmd("BufWritePost", { group = group, callback = on_write })
  require("pi-ide.features.pending.view").attach(group)
  M.load(checkpoints.folder())
end

function M.detach() end

--- Its line in :PiIde status.
function M.status_lines()
  local n = #M.list()
  return { ("  pending: %d change%s; %s"):format(n, n == 1 and "" or "s", watch.health()) }
end

return M
