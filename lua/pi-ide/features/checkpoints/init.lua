-- Checkpoints (src/checkpoint/): the workspace recorded at the start of each agent turn, off the
-- main thread. A chat's turn is known (its prompt starts it, its end ends it); an agent in a
-- terminal starts one with its first request after being idle (or a review opening), and it
-- lasts until the next. What a turn changed that no review showed is counted for the statusline
-- and the chat. :PiIde changes and :PiIde undo (changes.lua, undo.lua) read them.
local log = require("pi-ide.core.log")
local buffers = require("pi-ide.core.buffers")

local M = {}

local state = {
  async = nil, -- the uv_async_t the worker wakes us through
  waiting = {}, -- job id -> callback(ok, value_or_error)
  open = nil, -- the turn under way here: { n, agent, reviewed = { [rel path] = seen } } (seen: see on_review_closed)
  between = {}, -- rel path -> seen: the user's writes while no turn is under way (a chat's turn had ended)
  starting = {}, -- agent -> callbacks waiting for its checkpoint
  warning = nil, -- { n, text, other_text }: the last turn's files changed without review
  last = nil, -- the last turn begun in this session
  written = {}, -- rel path -> ms: the user's writes in Neovim
  told = {}, -- reason -> true: a skipped checkpoint's reason, said once
  prompted_at = nil, -- vim.uv.now() of the last prompt typed in an agent's terminal that began a turn
  jobs = {}, -- agent -> the job of the checkpoint being taken for its turn
  ended = nil, -- { n, agent, at = vim.uv.now() }: the last turn that ended here
  streams = {}, -- job id -> callback: a job that answers many times (a watch's batches)
}

-- How long a turn waits for its checkpoint before it starts anyway.
local PATIENCE_MS = 10000

local function cfg()
  return require("pi-ide.core.config").values.checkpoints
end

--- The folder checkpoints are of: Neovim's current directory.
function M.folder()
  return vim.fs.normalize(vim.fn.getcwd())
end

--- `path` relative to the folder, or nil when it is outside.
function M.relative(path)
  local dir, p = M.folder(), vim.fs.normalize(path)
  if p:sub(1, #dir + 1) == dir .. "/" then
    return p:sub(#dir + 2)
  end
end

local function drain()
  local native = require("pi-ide.core.native").get()
  local results = native and native.checkpoint_drain() or {}
  for _, r in ipairs(results) do
    local cb = state.streams[r.id] or state.waiting[r.id]
    state.waiting[r.id] = nil
    if cb then
      local ok, err = xpcall(cb, debug.traceback, r.ok, r.ok and r.value or r.error)
      if not ok then
        log.error("checkpoints: %s", tostring(err))
      end
    end
  end
end

--- Runs `job` (`{ op = ..., ... }`) on the worker; `cb(ok, value_or_error)` on the main loop.
--- Its number (native.checkpoint_wait).
function M.run(job, cb)
  local native = require("pi-ide.core.native").load()
  if not native then
    return cb(false, "the pi-ide.nvim library is not loaded")
  end
  if not state.async then
    state.async = vim.uv.new_async(function()
      vim.schedule(drain)
    end)
    native.checkpoint_attach(state.async)
    M.setup()
    vim.api.nvim_create_autocmd("VimLeavePre", {
      group = vim.api.nvim_create_augroup("PiIdeCheckpoints", { clear = true }),
      callback = function()
        native.checkpoint_detach()
        state.async:close()
      end,
    })
  end
  local c = cfg()
  job.folder, job.state = job.folder or M.folder(), vim.fn.stdpath("state") .. "/pi-ide"
  job.max_files, job.max_file_bytes, job.max_new_bytes = c.max_files, c.max_file_mb * 1024 * 1024, c.max_new_mb * 1024 * 1024
  job.keep_turns = c.keep_turns
  local id = native.checkpoint_job(job)
  state.waiting[id] = cb
  return id
end

--- Runs `job`, whose callback is called for each answer it gives until unstream(id) (a
--- workspace's watch: its start, then each batch of changes). Its number.
function M.stream(job, cb)
  local id = M.run(job, cb)
  if id then
    state.waiting[id], state.streams[id] = nil, cb
  end
  return id
end

function M.unstream(id)
  if id then
    state.streams[id] = nil
  end
end

--- The turn under way here ({ n, agent, ... }), if there is one; else the one that ended less
--- than `grace_ms` ago (a write it made lands a moment after its end), if asked.
function M.open_turn(grace_ms)
  local ended = state.ended
  if not state.open and grace_ms and ended and vim.uv.now() - ended.at < grace_ms then
    return ended
  end
  return state.open
end

local function plural(n, word)
  return ("%d %s%s"):format(n, word, n == 1 and "" or "s")
end

-- The first few of `names`, and how many more: the warning stays one line.
local function some(names)
  local shown = table.concat(vim.list_slice(names, 1, 3), ", ")
  return #names > 3 and ("%s +%d more"):format(shown, #names - 3) or shown
end

--- "⚠ 2 files changed without review: :PiIde changes" for turn `t`, or nil. Files that run
--- code or hold secrets (.git/config, hooks, .env, an ignored .envrc) count, and are said
--- apart: no undo puts them back; so are files written with other text than the user accepted,
--- and the other ignored files it changed (node_modules/), which are only counted. A turn of
--- changes found between two turns (`between`) says so.
function M.warning_of(t)
  local guarded, other, ignored = #(t.guarded or {}), #(t.other_text or {}), t.ignored_changed or 0
  local n = #(t.unreviewed or {}) + guarded
  if t.undone or n + ignored == 0 then
    return nil
  end
  local also = ignored > 0 and (" and %s (not recorded)"):format(plural(ignored, "ignored file")) or ""
  if n == 0 then
    return ("⚠ %s changed (not recorded)"):format(plural(ignored, "ignored file"))
  end
  local apart = guarded > 0 and (" (%d not undoable: %s)"):format(guarded, some(t.guarded)) or ""
  local lied = other > 0 and (" (%s: other text than you accepted)"):format(some(t.other_text)) or ""
  -- Changes no turn made (a chat's agent's background job after its turn ended) say so.
  local when = t.between and " between turns" or ""
  return ("⚠ %s changed without review%s%s%s%s: :PiIde changes"):format(plural(n, "file"), when, lied, apart, also)
end

--- The files of turn `open` whose change the user saw, for the job that ends it (with no turn
--- open, those the user wrote since the last one ended): `reviewed` (names), and in the same
--- order `reviewed_blobs` (the blob id of the text they saw) and `reviewed_lefts` (of what
--- their review showed before), "" when unknown.
local function reviewed_fields(job, open)
  job.reviewed, job.reviewed_blobs, job.reviewed_lefts = {}, {}, {}
  for rel, seen in pairs(open and open.reviewed or state.between) do
    table.insert(job.reviewed, rel)
    table.insert(job.reviewed_blobs, seen.blob or "")
    table.insert(job.reviewed_lefts, seen.left or "")
  end
  state.between = open and state.between or {}
  return job
end

local function settled(t)
  if t and M.warning_of(t) then
    state.warning = { n = t.n, text = M.warning_of(t), other_text = t.other_text or {} }
    vim.cmd.redrawstatus({ bang = true })
  end
end

local function skipped(err)
  log.warn("checkpoint: %s", tostring(err))
  -- Once per kind of reason (sizes change from turn to turn).
  local kind = tostring(err):gsub("%d", "")
  if not state.told[kind] then
    state.told[kind] = true
    vim.notify("pi-ide.nvim: " .. tostring(err), vim.log.levels.WARN)
  end
end

--- Starts a turn of `agent` (its prompt, if known) and calls `after()` once the workspace is
--- recorded — or at once when checkpoints are off. Calls made while a checkpoint is being taken
--- run after it, in order. `working`: a chat's, which says whether its turn is still under way
--- (its end ends it; an agent's requests meanwhile start no turn of their own). Answers the
--- checkpoint's job while one is being taken.
function M.before_turn(agent, prompt, after, working, closing)
  if not cfg().enabled then
    return after()
  end
  if state.starting[agent] then
    table.insert(state.starting[agent], after)
    return state.jobs[agent]
  end
  state.starting[agent] = { after }
  local folder = M.folder()
  -- Whichever comes first: the checkpoint, or PATIENCE_MS (a hung disk must not hold the turn).
  local function go()
    local waiting = state.starting[agent] or {}
    state.starting[agent], state.jobs[agent] = nil, nil
    for _, f in ipairs(waiting) do
      f()
    end
  end
  local timer = vim.defer_fn(function()
    if state.starting[agent] then
      skipped("the checkpoint is taking long: the turn starts without waiting for it")
      go()
    end
  end, PATIENCE_MS)
  local function began(ok, r)
    pcall(function()
      timer:stop()
      timer:close()
    end)
    if ok then
      state.open = { n = r.turn.n, agent = agent, reviewed = {}, working = working, folder = folder, began = vim.uv.now() }
      state.last = r.turn
      settled(r.closed)
      M.reload(folder, r.closed and r.closed.changed or {})
      require("pi-ide.core.events").fire("PiIdeCheckpoint", { turn = r.turn.n, agent = agent })
    else
      skipped(r)
    end
    go()
  end
  -- Whatever fails here, the turn must not be held: its prompt waits in `starting`. The turn
  -- still open (an agent's in a terminal) ends with this checkpoint: what the user saw of it goes.
  local job = reviewed_fields({ op = "begin", agent = agent, prompt = prompt, folder = folder }, closing or state.open)
  local queued, id = pcall(M.run, job, began)
  if not queued then
    return began(false, id)
  end
  state.jobs[agent] = state.starting[agent] and id or nil
  return state.jobs[agent]
end

--- Ends `agent`'s turn: `done(turn)` with what it changed (nil when no turn was under way).
function M.after_turn(agent, done)
  local open = state.open
  if not open or open.agent ~= agent then
    return done and done(nil)
  end
  state.open, state.ended = nil, { n = open.n, agent = open.agent, at = vim.uv.now() }
  M.run(reviewed_fields({ op = "end", n = open.n, folder = open.folder }, open), function(ok, t)
    if not ok then
      return log.warn("checkpoint at the end of turn %d: %s", open.n, tostring(t))
    end
    settled(t)
    M.reload(open.folder, t.changed or {})
    local checked = { turn = t.n, agent = t.agent, changed = t.changed, unreviewed = t.unreviewed, guarded = t.guarded, other_text = t.other_text, ignored_changed = t.ignored_changed }
    require("pi-ide.core.events").fire("PiIdeTurnChecked", checked)
    if done then
      done(t)
    end
  end)
end

--- Buffers of `paths` (in `folder`) show what is on disk now: unmodified ones, without a prompt
--- whatever 'autoread' says (a shell write is not seen until Neovim checks).
function M.reload(folder, paths)
  for _, p in ipairs(paths) do
    local buf = buffers.find(folder .. "/" .. p)
    if buf and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
      buffers.reload(buf)
    end
  end
end

-- Whether `ms` (a vim.uv.now()) is within `checkpoints.idle_ms` of now.
local function recently(ms)
  return ms ~= nil and vim.uv.now() - ms < cfg().idle_ms
end

--- An agent in a terminal asked something after `checkpoints.idle_ms` of quiet (the core
--- tells): its turn begins, ending the one under way — unless a chat's turn is (a chat's agent
--- may ask through the same server).
function M.activity(agent, after)
  if not cfg().enabled or M.chat_turn() or recently(state.prompted_at) then
    return -- a prompt typed in its terminal began this turn: the agent's first request is in it
  end
  local closing = state.open
  state.open = nil
  return M.before_turn(agent, nil, after or function() end, nil, closing)
end

--- The user sent a prompt to `agent` in its terminal (Enter there: terminal/prompts.lua): its
--- turn begins, ending the one under way. An agent may write without asking Neovim anything (its
--- own edits, after an "always" answer): its turn then still has a checkpoint. Not within
--- `idle_ms` of the last turn's start (an answer to the agent's question is no new prompt).
--- Answers the job of the turn's checkpoint, while it is being taken.
function M.prompt_sent(agent)
  if not cfg().enabled or recently(state.prompted_at) or recently(state.open and state.open.began) then
    return
  end
  local job = M.activity(agent)
  state.prompted_at = vim.uv.now()
  return job
end

--- An agent's terminal opened: the folder's snapshot is taken ahead, so that the first prompt's
--- checkpoint hashes only what changed since (its Enter waits for it: terminal/prompts.lua).
function M.warm()
  if cfg().enabled then
    M.run({ op = "warm" }, function(ok, err)
      if not ok then
        log.warn("checkpoint taken ahead: %s", tostring(err))
      end
    end)
  end
end

--- :PiIde checkpoint: one now, by the user.
function M.checkpoint()
  M.run(reviewed_fields({ op = "begin", agent = "checkpoint" }, state.open), function(ok, r)
    if not ok then
      return vim.notify("pi-ide.nvim: " .. tostring(r), vim.log.levels.ERROR)
    end
    state.open, state.last = nil, r.turn
    settled(r.closed)
    vim.notify(("pi-ide.nvim: checkpoint %d of %s"):format(r.turn.n, vim.fn.fnamemodify(M.folder(), ":~")), vim.log.levels.INFO)
    require("pi-ide.core.events").fire("PiIdeCheckpoint", { turn = r.turn.n, agent = r.turn.agent })
  end)
end

--- The chat turn under way (an undo now would race the agent), if there is one.
function M.chat_turn()
  local open = state.open
  -- A chat whose agent crashed mid-turn is not working: its turn no longer counts.
  -- Just begun, its agent may not have said it works yet.
  local under_way = open and open.working and (open.working() or vim.uv.now() - open.began < 5000)
  return under_way and open or nil
end

--- What :PiIde status says of checkpoints.
function M.status_line()
  if not cfg().enabled then
    return "  checkpoints: off"
  end
  local t = state.last
  if not t then
    return "  checkpoints: none taken in this session yet"
  end
  local at = os.date("%H:%M:%S", math.floor(t.started_ms / 1000))
  return ("  checkpoints: last turn %d (%s) at %s; :PiIde changes, :PiIde undo"):format(t.n, t.agent, at)
end

--- What the statusline says: the last turn's files changed without review, until looked at.
function M.status()
  return state.warning and state.warning.text or ""
end

--- The turn the warning is about, while it stands: a terminal agent's turn is over once the
--- next has begun, so :PiIde changes shows that one, not the newest.
function M.warned_turn()
  return state.warning and state.warning.n
end

--- The warning was looked at (:PiIde changes) or undone.
function M.seen()
  if state.warning then
    state.warning = nil
    vim.cmd.redrawstatus({ bang = true })
  end
end

--- When the user last wrote `rel` in Neovim (ms since the epoch), if they did.
function M.written(rel)
  return state.written[rel]
end

--- Now, in ms since the epoch (the clock the turns are stamped with).
function M.now_ms()
  local s, us = vim.uv.gettimeofday()
  return s * 1000 + math.floor(us / 1000)
end

-- What the user saw of the files of the turn under way (or, with none, since the last ended).
local function seen_files()
  return state.open and state.open.reviewed or state.between
end

-- The user wrote a file in Neovim: its text as written is what they saw. The file written
-- (`:w other.txt` writes other.txt, not the buffer's file), hashed from disk at once (a later
-- write of the agent's is not the user's); one over the size cap is not recorded anyway.
local function on_write(ev)
  local file = vim.fn.fnamemodify(ev.match ~= "" and ev.match or vim.api.nvim_buf_get_name(ev.buf), ":p")
  local rel = M.relative(file)
  if rel then
    state.written[rel] = M.now_ms()
    local native, seen = require("pi-ide.core.native").get(), seen_files()
    local blob = native and native.blob_of_file(file, cfg().max_file_mb * 1024 * 1024)
    seen[rel] = { blob = blob, left = seen[rel] and seen[rel].left }
  end
end

-- An accepted review: the text accepted (`blob`) is what the file must hold when the turn
-- ends, and what it showed before (`left`) what it held when the turn began. A review whose
-- left side is what the user saw last of the file (an earlier review, their write) goes on
-- from there: the turn's start must be the first one's left side.
local function on_review_closed(ev)
  local d = ev.data or {}
  local rel = d.result == "accepted" and d.path and M.relative(d.path)
  if rel and state.open then
    local before, left = state.open.reviewed[rel], type(d.old_blob) == "string" and d.old_blob or nil
    if before and before.blob and before.blob == left then
      left = before.left
    end
    state.open.reviewed[rel] = { blob = type(d.blob) == "string" and d.blob or nil, left = left }
  end
end

-- A chat's agent wrote other text than the user accepted (read back when its call ended):
-- the statusline says so at once; the turn's end lists it as not reviewed. Told after that end
-- (its read-back raced it), it leaves the end's fuller warning, which already names the file.
local function on_wrote_other(ev)
  local rel = M.relative((ev.data or {}).path or "")
  local told = state.warning and vim.tbl_contains(state.warning.other_text or {}, rel)
  if rel and not told then
    state.warning = { n = state.open and state.open.n, text = ("⚠ %s: other text than you accepted: :PiIde changes"):format(rel) }
    vim.cmd.redrawstatus({ bang = true })
  end
end

--- Watches what the user sees and writes: an accepted review and a write in Neovim are not
--- changes "without review", as long as the file holds the text they saw.
function M.setup()
  local group = vim.api.nvim_create_augroup("PiIdeCheckpointsWatch", { clear = true })
  vim.api.nvim_create_autocmd("BufWritePost", { group = group, callback = on_write })
  vim.api.nvim_create_autocmd("User", { group = group, pattern = "PiIdeReviewClosed", callback = on_review_closed })
  vim.api.nvim_create_autocmd("User", { group = group, pattern = "PiIdeWroteOther", callback = on_wrote_other })
end

--- Its line in :PiIde status.
function M.status_lines()
  return { M.status_line() }
end

--- Its :PiIde subcommands (core/commands.lua).
M.commands = {
  checkpoint = { run = function() M.checkpoint() end },
  changes = {
    run = function(opts)
      require("pi-ide.features.checkpoints.changes").run(opts.fargs[2])
    end,
    -- A turn's number, or keep / undo for the pending changes (features/pending/).
    complete = require("pi-ide.core.commands").first_of({ "keep", "undo" }),
  },
  undo = {
    run = function(opts)
      require("pi-ide.features.checkpoints.undo").run(opts.bang)
    end,
  },
}

return M
