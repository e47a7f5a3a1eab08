-- Reviews: the two-pane diff every file the agent wants to write passes through.
--
-- The agent's openDiff call is parked in the core until the user decides. Accepting (`:w` in
-- the proposal, the accept key, :PiIde accept) answers FILE_SAVED with the proposal's text as
-- the user left it; the agent writes the file, never us. Every other ending answers
-- DIFF_REJECTED first, exactly once (the Pi extension fails open: an error or a silent close
-- would let the write through unreviewed).
local config = require("pi-ide.config")
local log = require("pi-ide.log")
local buffers = require("pi-ide.buffers")

local M = {}

-- Reviews are keyed by the client that asked and its tab_name: two agents may pick the same
-- name, and one agent's closeAllDiffTabs must not touch another's reviews.
local reviews = {} -- key -> review
local order = {} -- keys, oldest first (for "n of m")

local function key(client, tab_name)
  return tostring(client) .. "\0" .. tab_name
end

local user_event = require("pi-ide.events").fire

local function escape_bar(s)
  return (s:gsub("%%", "%%%%"))
end

local function key_label(lhs)
  local leader = vim.g.mapleader or "\\"
  return (lhs:gsub("<[Ll]eader>", leader == " " and "<Space>" or leader))
end

local function display_name(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

-- The key hints that fit whole after `head` in the window, in their order (a hint cut to "<t"
-- helps no one). When room is short the accept key goes first, then the reject hint; ":w accept"
-- stays longest.
local function fit_hints(win, head, hints)
  if not vim.api.nvim_win_is_valid(win) then
    return hints
  end
  local room = vim.api.nvim_win_get_width(win) - vim.fn.strdisplaywidth(head) - #"  ·  "
  local width = function(list)
    return vim.fn.strdisplaywidth(table.concat(list, "  "))
  end
  while #hints > 0 and width(hints) > room do
    table.remove(hints, math.min(2, #hints))
  end
  return hints
end

-- Winbars: the proposal says what changed, where it stands among open reviews, and the keys.
local function refresh_winbars()
  local keys = config.values.diff.keys
  for i, name in ipairs(order) do
    local r = reviews[name]
    if r and r.ui then
      local parts = { display_name(r.path) }
      if r.stats then
        table.insert(parts, ("+%d −%d"):format(r.stats.added, r.stats.removed))
        table.insert(parts, ("%d hunk%s"):format(#r.stats.hunks, #r.stats.hunks == 1 and "" or "s"))
      else
        table.insert(parts, "…") -- the core is still counting
      end
      if #order > 1 then
        table.insert(parts, ("%d of %d"):format(i, #order))
      end
      if r.user_edits then
        table.insert(parts, "⚠ your buffer has unsaved edits (kept; this diff is against the disk)")
      end
      local hints = { ":w accept" }
      if keys.accept then
        table.insert(hints, key_label(keys.accept) .. " accept")
      end
      table.insert(hints, keys.reject and (key_label(keys.reject) .. " reject") or ":q reject")
      local head = " " .. table.concat(parts, "  ·  ")
      local shown = fit_hints(r.ui.right_win, head, hints)
      local right_bar = escape_bar(head) .. (#shown > 0 and ("  ·  " .. escape_bar(table.concat(shown, "  "))) or "")
      local left_bar = " "
        .. escape_bar(
          display_name(r.old_path)
            .. (r.old_error and ("  ·  ⚠ cannot read: " .. r.old_error) or r.new_file and "  ·  new file" or "  ·  on disk")
        )
      if vim.api.nvim_win_is_valid(r.ui.right_win) then
        vim.wo[r.ui.right_win].winbar = right_bar
      end
      if vim.api.nvim_win_is_valid(r.ui.left_win) then
        vim.wo[r.ui.left_win].winbar = left_bar
      end
    end
  end
end

local function forget(r)
  reviews[r.key] = nil
  for i, name in ipairs(order) do
    if name == r.key then
      table.remove(order, i)
      break
    end
  end
end

-- Takes the review's windows and buffers away and puts the user back where they were when it
-- opened, if they are in the review now.
local function close_ui(r)
  local ui = r.ui
  if not ui then
    return
  end
  r.ui = nil
  local cur = vim.api.nvim_get_current_win()
  local inside = cur == ui.left_win or cur == ui.right_win
  for _, buf in ipairs({ ui.right_buf, ui.left_buf }) do
    if vim.api.nvim_buf_is_valid(buf) then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
  -- A review tab can outlive its buffers only as the last window standing: close it.
  if ui.tab and vim.api.nvim_tabpage_is_valid(ui.tab) and #vim.api.nvim_list_tabpages() > 1 then
    local only_ours = true
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(ui.tab)) do
      if win ~= ui.left_win and win ~= ui.right_win then
        local b = vim.api.nvim_win_get_buf(win)
        if vim.api.nvim_buf_get_name(b) ~= "" or vim.bo[b].modified then
          only_ours = false
        end
      end
    end
    if only_ours then
      pcall(vim.cmd, "tabclose " .. vim.api.nvim_tabpage_get_number(ui.tab))
    end
  end
  if inside and vim.api.nvim_win_is_valid(ui.origin_win) then
    vim.api.nvim_set_current_win(ui.origin_win)
  end
end

-- After an accept the agent writes the file: reload buffers showing it (unmodified ones only).
-- A write comes as a burst of events (truncate, write, close) that a loaded machine may spread
-- out: each event restarts a short quiet timer, and watching goes on 2 s after the first
-- reload (so a buffer never keeps a half-written file), or 30 s when the agent never writes.
-- One watcher per file: another accept of the same file renews it.
local watching = {} -- path -> { renew = fn }

local function reload_when_written(path)
  if watching[path] then
    watching[path].renew()
    return
  end
  local dir, base = vim.fs.dirname(path), vim.fs.basename(path)
  local watcher = vim.uv.new_fs_event()
  if not watcher then
    return
  end
  local quiet = vim.uv.new_timer()
  local deadline = vim.uv.new_timer()
  local function stop()
    watching[path] = nil
    for _, h in ipairs({ watcher, quiet, deadline }) do
      if not h:is_closing() then
        h:close()
      end
    end
  end
  local warned, reloaded = false, false
  local function reload()
    local buf = buffers.find(path)
    if not buf or not vim.api.nvim_buf_is_loaded(buf) then
      return
    end
    if vim.bo[buf].modified then
      if not warned then
        warned = true
        log.notify(
          ("the agent wrote %s, but your buffer has unsaved edits: it is left as it is (:e! loads the new file)"):format(
            display_name(path)
          ),
          vim.log.levels.WARN
        )
      end
      return
    end
    -- 'autoread' for this one check, so that no prompt appears whatever the user's setting.
    vim.api.nvim_buf_call(buf, function()
      vim.cmd("setlocal autoread | silent! checktime " .. buf .. " | setlocal autoread<")
    end)
  end
  local function wait(ms)
    deadline:stop()
    deadline:start(ms, 0, vim.schedule_wrap(stop))
  end
  watcher:start(dir, {}, function(err, fname)
    if err or (fname and fname ~= base) or quiet:is_closing() then
      return
    end
    quiet:stop()
    quiet:start(50, 0, function()
      vim.schedule(reload)
      -- Later events of the same write still reload; then watching ends.
      if not reloaded then
        reloaded = true
        wait(2000)
      end
    end)
  end)
  watching[path] = {
    renew = function()
      reloaded = false
      wait(30000)
    end,
  }
  -- An agent that never writes (it may fail): stop watching after a while.
  wait(30000)
end

--- Ends a review: answers the agent (once), fires PiIdeDiffClosed, then removes the UI on the
--- next turn of the loop (it may be ending from inside one of its own autocmds).
--- result: "accepted" (with text), "rejected", or "abandoned" (the agent is gone: no answer).
local function finish(r, result, text)
  if r.done then
    return
  end
  r.done = true
  forget(r)
  if result == "accepted" then
    reload_when_written(r.path)
    r.reply({ "FILE_SAVED", text })
  elseif result == "rejected" then
    r.reply({ "DIFF_REJECTED", r.tab_name })
  end
  log.info("review %s of %s: %s", r.tab_name, r.path, result)
  user_event("PiIdeDiffClosed", { tab_name = r.tab_name, path = r.path, result = result })
  vim.schedule(function()
    close_ui(r)
    refresh_winbars()
  end)
end

-- The proposal as the user left it, with its line endings.
local function proposal_text(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local sep = vim.bo[buf].fileformat == "dos" and "\r\n" or "\n"
  local text = table.concat(lines, sep)
  if vim.bo[buf].eol or vim.bo[buf].fixeol then
    text = text .. sep
  end
  return text
end

function M.accept(r)
  if r.ui and vim.api.nvim_buf_is_valid(r.ui.right_buf) then
    local text = proposal_text(r.ui.right_buf)
    vim.bo[r.ui.right_buf].modified = false
    finish(r, "accepted", text)
  end
end

function M.reject(r)
  finish(r, "rejected")
end

-- A review must open even when another plugin's autocmd throws on the events it causes (a
-- broken BufEnter, WinNew or TabNew handler is common): if every review failed, the user could
-- never accept an agent's write. Building our own buffers fires nothing at all; opening windows
-- fires what it fires (statuslines and the like follow it), and an error raised from there is
-- reported once per review, not taken as ours, provided the command did its work.
local function without_autocmds(fn)
  local ei = vim.o.eventignore
  -- Setting an option fires OptionSet, which may throw too; the value is set either way.
  pcall(function()
    vim.o.eventignore = "all"
  end)
  local ok, err = pcall(fn)
  pcall(function()
    vim.o.eventignore = ei
  end)
  if not ok then
    error(err, 0)
  end
  return err
end

local function report_autocmd_error(r, err)
  if not r.reported_autocmd_error then
    r.reported_autocmd_error = true
    local first = tostring(err):gsub("^.-Autocommands for [^:]*:%s*", ""):match("[^\n]*")
    log.notify(
      ("an autocommand of another plugin failed while the review of %s opened (the review is fine): %s"):format(
        display_name(r.path),
        first
      ),
      vim.log.levels.WARN
    )
  end
end

local function tolerant(r, fn, done)
  local ok, err = pcall(fn)
  if ok then
    return
  end
  if not done() then
    error(err, 0)
  end
  report_autocmd_error(r, err)
end

-- Opens a window showing `buf` with `cmd` (":tab sbuffer", ...). When another plugin's autocmd
-- cut the command short (a throwing WinNew leaves an empty window behind), what it made is
-- taken back and the window is opened again without autocmds.
local function open_window(r, cmd, buf)
  local before = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    before[win] = true
  end
  local from = vim.api.nvim_get_current_win()
  local ok, err = pcall(vim.cmd, cmd .. " " .. buf)
  if vim.api.nvim_get_current_buf() == buf then
    if not ok then
      report_autocmd_error(r, err)
    end
    return
  end
  if ok then
    error(("%s did not show the review's buffer"):format(cmd), 0)
  end
  without_autocmds(function()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if not before[win] then
        pcall(vim.api.nvim_win_close, win, true)
      end
    end
    if vim.api.nvim_win_is_valid(from) then
      vim.api.nvim_set_current_win(from)
    end
    vim.cmd(cmd .. " " .. buf)
  end)
  report_autocmd_error(r, err)
end

-- Buffer names must be unique; a leftover of the same name gets a number added.
local function set_name(buf, name)
  local candidate, n = name, 1
  while vim.fn.bufexists(candidate) == 1 do
    n = n + 1
    candidate = ("%s (%d)"):format(name, n)
  end
  vim.api.nvim_buf_set_name(buf, candidate)
end

-- Loads a file into a buffer with :read, at C speed, without an undo step (undoing must not
-- empty the proposal) and without touching the alternate file. 'cpoptions' loses its "a" for
-- the read: with it, :read leaves a hidden buffer behind for every file it reads (~20 KiB
-- each; the soak test found it).
local function load_file(buf, path, ff)
  local cpo = vim.o.cpoptions
  vim.o.cpoptions = cpo:gsub("a", "")
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    local undolevels = vim.bo[buf].undolevels
    vim.bo[buf].undolevels = -1
    vim.cmd(("silent keepalt keepjumps 0read ++edit %s %s"):format(ff and ("++ff=" .. ff) or "", vim.fn.fnameescape(path)))
    vim.cmd("silent keepjumps $delete _")
    vim.bo[buf].undolevels = undolevels
  end)
  vim.o.cpoptions = cpo
  if not ok then
    error(err, 0)
  end
end

-- Left: the file as the agent diffed it, read from disk (not the user's buffer, which may
-- hold unsaved edits).
local function make_left(r, args)
  local left = vim.api.nvim_create_buf(false, true)
  vim.bo[left].bufhidden = "wipe"
  set_name(left, ("pi-ide://%s/disk/%s"):format(r.tab_name, vim.fs.basename(r.old_path)))
  -- The core staged the file as it read and diffed it: the user's path itself is never opened
  -- here (it may have become a FIFO meanwhile, and reading one would hang Neovim).
  if args.old.file then
    load_file(left, args.old.file)
  end
  vim.bo[left].modifiable = false
  vim.bo[left].modified = false
  return left
end

-- Right: the proposal, editable; `:w` accepts it (acwrite: nothing is written to disk).
local function make_right(r, args)
  local right = vim.api.nvim_create_buf(false, false)
  vim.bo[right].buftype = "acwrite"
  vim.bo[right].bufhidden = "wipe"
  vim.bo[right].swapfile = false
  set_name(right, ("pi-ide://%s/%s"):format(r.tab_name, vim.fs.basename(r.path)))
  load_file(right, r.proposal_file, args.new.crlf and "dos" or "unix")
  -- Both staged files are read: the core, which owns them, deletes them now (it also does when
  -- the call ends, whichever comes first).
  local native = require("pi-ide.native").get()
  if native then
    native.staged_loaded(r.req)
  end
  vim.bo[right].eol = args.new.eol
  vim.bo[right].fixeol = args.new.eol
  vim.bo[right].modified = false
  return right
end

local function attach(r, left, right)
  local group = vim.api.nvim_create_augroup("PiIdeDiff_" .. right, { clear = true })
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    group = group,
    buffer = right,
    callback = log.guard("accepting a review (:w)", function()
      M.accept(r)
    end),
  })
  -- The key hints shown depend on the window's width.
  vim.api.nvim_create_autocmd({ "VimResized", "WinResized" }, {
    group = group,
    callback = log.guard("fitting a review's winbar", refresh_winbars),
  })
  -- However the proposal disappears (:q, :tabclose, :bwipe, :bd), that is a rejection.
  vim.api.nvim_create_autocmd({ "BufWipeout", "BufUnload" }, {
    group = group,
    buffer = right,
    callback = log.guard("rejecting a closed review", function()
      finish(r, "rejected")
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end),
  })
  local keys = config.values.diff.keys
  for _, buf in ipairs({ left, right }) do
    if keys.accept then
      vim.keymap.set("n", keys.accept, function()
        M.accept(r)
      end, { buffer = buf, nowait = true, desc = "pi-ide: accept this proposal" })
    end
    if keys.reject then
      vim.keymap.set("n", keys.reject, function()
        M.reject(r)
      end, { buffer = buf, nowait = true, desc = "pi-ide: reject this proposal" })
    end
  end
end

-- The cursor goes to the first change, as Neovim's diff shows it.
local function to_first_hunk(win)
  vim.api.nvim_win_call(win, function()
    vim.api.nvim_win_set_cursor(win, { 1, 0 })
    if vim.fn.diff_hlID(1, 1) == 0 then
      vim.cmd("keepjumps normal! ]c")
    end
  end)
end

-- Highlighting comes last: loading a syntax file costs several milliseconds per buffer
-- (Rust's: ~6 ms here), so the panes are shown first and colored on the next turns.
local function set_filetype(buf, win, ft)
  if ft == "" or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local modified = vim.bo[buf].modified
  vim.bo[buf].filetype = ft
  vim.bo[buf].modified = modified
  -- An ftplugin may set its own folding; the review keeps diff folding.
  if vim.api.nvim_win_is_valid(win) and vim.wo[win].diff and vim.wo[win].foldmethod ~= "diff" then
    vim.wo[win].foldmethod = "diff"
  end
end

-- Builds the review in turns of the main loop (left pane, proposal, windows and diff, then
-- highlighting), so that even a 5 MiB file never blocks typing or redraws for long in one go.
local function show(r, args)
  if r.done then
    return
  end
  local ft = vim.filetype.match({ filename = r.path }) or ""
  local origin_win = vim.api.nvim_get_current_win()
  local ui = { origin_win = origin_win }
  local function step(fn)
    vim.schedule(function()
      if r.done then
        -- Ended while being built (close_tab, a disconnect): drop what exists.
        for _, b in ipairs({ ui.left_buf, ui.right_buf }) do
          if b and vim.api.nvim_buf_is_valid(b) then
            pcall(vim.api.nvim_buf_delete, b, { force = true })
          end
        end
        return
      end
      local ok, err = xpcall(fn, debug.traceback)
      if not ok then
        log.notify("cannot show the review of " .. display_name(r.path) .. ": " .. tostring(err), vim.log.levels.ERROR)
        r.ui = ui
        finish(r, "rejected")
      end
    end)
  end
  ui.left_buf = without_autocmds(function()
    return make_left(r, args)
  end)
  step(function()
    ui.right_buf = without_autocmds(function()
      return make_right(r, args)
    end)
    step(function()
      -- Explicit directions, so 'splitright'/'splitbelow' never flip the panes.
      if vim.api.nvim_win_is_valid(origin_win) then
        vim.api.nvim_set_current_win(origin_win)
      end
      if config.values.diff.layout == "tab" then
        open_window(r, "tab sbuffer", ui.left_buf)
        ui.tab = vim.api.nvim_get_current_tabpage()
      else
        open_window(r, "rightbelow vertical sbuffer", ui.left_buf)
      end
      ui.left_win = vim.api.nvim_get_current_win()
      open_window(r, "rightbelow vertical sbuffer", ui.right_buf)
      ui.right_win = vim.api.nvim_get_current_win()
      r.ui = ui
      -- Diff mode on the left is cheap; on the right Neovim computes the diff (the longest
      -- single piece of work): for a large file it gets a turn of its own; a small one is
      -- finished in this turn, so no frame ever shows the panes without the diff.
      local function diff_on(win)
        tolerant(r, function()
          vim.api.nvim_win_call(win, function()
            vim.cmd("diffthis")
          end)
        end, function()
          return vim.wo[win].diff
        end)
      end
      diff_on(ui.left_win)
      attach(r, ui.left_buf, ui.right_buf)
      local large = (args.new.bytes or 0) > 256 * 1024
      ;(large and step or function(f)
        f()
      end)(function()
        diff_on(ui.right_win)
        pcall(to_first_hunk, ui.right_win)
        r.shown = true
        refresh_winbars()
        user_event("PiIdeDiffOpened", { tab_name = r.tab_name, path = r.path })
        -- Highlighting is a nicety: a filetype plugin that fails never ends the review.
        step(function()
          pcall(set_filetype, ui.right_buf, ui.right_win, ft)
          step(function()
            pcall(set_filetype, ui.left_buf, ui.left_win, ft)
          end)
        end)
      end)
    end)
  end)
end

-- While the user is typing (Insert, Visual, Command-line mode...), a review opening under their
-- fingers would take keystrokes: wait until they are back in Normal mode.
local function busy_mode()
  local m = vim.api.nvim_get_mode()
  if m.blocking then
    return true
  end
  local c = m.mode:sub(1, 1)
  return not (c == "n" or c == "t") or m.mode:sub(1, 2) == "no"
end

local function show_when_ready(r, args)
  if not busy_mode() then
    show(r, args)
    return
  end
  local names = { i = "Insert", R = "Replace", v = "Visual", V = "Visual", ["\22"] = "Visual", s = "Select", S = "Select", ["\19"] = "Select", c = "Command-line" }
  local mode = vim.api.nvim_get_mode().mode
  vim.notify(
    ("pi-ide.nvim: the agent wants to change %s; the review opens when you leave %s mode"):format(
      display_name(r.path),
      names[mode:sub(1, 1)] or names[mode:sub(1, 2)] or ("'" .. mode .. "'")
    ),
    vim.log.levels.INFO
  )
  local id
  id = vim.api.nvim_create_autocmd("ModeChanged", {
    pattern = "*:n",
    callback = log.guard("showing a waiting review", function()
      vim.schedule(function()
        if not busy_mode() then
          pcall(vim.api.nvim_del_autocmd, id)
          show(r, args)
        end
      end)
    end),
  })
end

--- openDiff: (args, reply, ev) from the tool dispatcher; answers through `reply` later.
function M.open(args, reply, ev)
  local old = reviews[key(ev.client, args.tab_name)]
  if old then
    -- The same tab_name again: the old call is superseded; it must still be answered.
    finish(old, "rejected")
    close_ui(old)
  end
  local path = buffers.to_path(args.new_file_path)
  local user_buf = buffers.find(path)
  local r = {
    tab_name = args.tab_name,
    key = key(ev.client, args.tab_name),
    client = ev.client,
    req = ev.req,
    reply = reply,
    path = path,
    old_path = buffers.to_path(args.old_file_path),
    proposal_file = args.proposal_file,
    stats = nil, -- counted by the core meanwhile; see M.set_stats
    new_file = not args.old.exists,
    old_error = args.old.error,
    user_edits = user_buf ~= nil and vim.api.nvim_buf_is_loaded(user_buf) and vim.bo[user_buf].modified,
    shown = false, -- both panes are up and in diff mode: the user can decide it now
    done = false,
  }
  reviews[r.key] = r
  table.insert(order, r.key)
  if args.stage_error then
    log.notify(args.stage_error .. "; the change was rejected", vim.log.levels.ERROR)
    finish(r, "rejected")
    return
  end
  local ok, err = xpcall(show_when_ready, debug.traceback, r, args)
  if not ok then
    -- Without a review on screen the only safe answer is a rejection.
    log.notify("cannot show the review of " .. display_name(path) .. ": " .. tostring(err), vim.log.levels.ERROR)
    finish(r, "rejected")
  end
end

--- The core's count of the changes arrived (after the review was handed to us).
function M.set_stats(req, stats)
  for _, name in ipairs(order) do
    local r = reviews[name]
    if r.req == req then
      r.stats = stats
      refresh_winbars()
      return
    end
  end
end

--- close_tab: closes (and if undecided, rejects) that client's review; nothing when there is
--- none.
function M.close(tab_name, client)
  local r = reviews[key(client, tab_name)]
  if r then
    finish(r, "rejected")
  end
end

--- closeAllDiffTabs: the reviews this client opened (all of them when `client` is nil: the
--- editor is stopping); returns how many. Another agent's reviews are never touched.
function M.close_all(client)
  local n = 0
  for _, name in ipairs(vim.list_slice(order)) do
    local r = reviews[name]
    if r and (client == nil or r.client == client) then
      finish(r, "rejected")
      n = n + 1
    end
  end
  return n
end

--- The connection of the agent that asked for these reviews ended; the core has answered them
--- (DIFF_REJECTED) before it closed. `reason`: why the editor closed it, if it did.
function M.abandon(reqs, reason)
  local gone = {}
  for _, req in ipairs(reqs or {}) do
    gone[req] = true
  end
  for _, name in ipairs(vim.list_slice(order)) do
    local r = reviews[name]
    if r and gone[r.req] then
      local msg = reason and ("the review of %s was rejected: the connection was closed (%s)"):format(display_name(r.path), reason)
        or ("the agent disconnected; the review of %s was closed"):format(display_name(r.path))
      log.notify(msg, vim.log.levels.WARN)
      finish(r, "abandoned")
    end
  end
end

--- The review the user is in (a pane of it is current, or its tab is), if any.
function M.current()
  local buf = vim.api.nvim_get_current_buf()
  local tab = vim.api.nvim_get_current_tabpage()
  for _, name in ipairs(order) do
    local r = reviews[name]
    if r.ui and (r.ui.left_buf == buf or r.ui.right_buf == buf or r.ui.tab == tab) then
      return r
    end
  end
end

--- For the statusline: how many reviews are on screen (the user can decide them now), and how
--- many are still waiting to be shown (being built, or held while the user is in Insert mode).
function M.count()
  local shown = 0
  for _, name in ipairs(order) do
    if reviews[name].shown then
      shown = shown + 1
    end
  end
  return shown, #order - shown
end

--- Open reviews, oldest first: { tab_name, path }.
function M.list()
  local out = {}
  for _, name in ipairs(order) do
    table.insert(out, { tab_name = reviews[name].tab_name, path = reviews[name].path })
  end
  return out
end

--- Stopping or quitting: every open review is rejected, before any socket closes.
function M.reject_all()
  return M.close_all()
end

return M
