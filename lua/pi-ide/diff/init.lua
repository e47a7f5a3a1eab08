-- Reviews: the two-pane diff every file the agent wants to write passes through.
--
-- The agent's openDiff call is parked in the core until the user decides. A deliberate accept
-- (intent.lua: `:w` in the proposal's window, the accept key, :PiIde accept) answers
-- FILE_SAVED with the proposal's text exactly as the user left it (load.lua); the agent writes
-- the file, never us. Every other ending answers DIFF_REJECTED first, exactly once (the Pi
-- extension fails open: an error or a silent close would let the write through unreviewed).
--
-- Here: the reviews and their lifecycle. Beside it: load.lua (bytes in and out), intent.lua
-- (what a write of the proposal means), ui.lua (windows and buffers), winbar.lua, reload.lua
-- (buffers follow the agent's write).
local config = require("pi-ide.config")
local log = require("pi-ide.log")
local buffers = require("pi-ide.buffers")
local load = require("pi-ide.diff.load")
local ui = require("pi-ide.diff.ui")
local winbar = require("pi-ide.diff.winbar")

local M = {}

-- Reviews are keyed by the client that asked and its tab_name: two agents may pick the same
-- name, and one agent's closeAllDiffTabs must not touch another's reviews.
local reviews = {} -- key -> review
local order = {} -- keys, oldest first (for "n of m")
-- key -> the trigger (or false) of a close_tab that came while its openDiff was being staged.
local closed_early = {}
local MAX_CLOSED_EARLY = 64

local function key(client, tab_name)
  return tostring(client) .. "\0" .. tab_name
end

local user_event = require("pi-ide.events").fire
local display_name = winbar.display_name

local function in_order()
  local list = {}
  for _, k in ipairs(order) do
    table.insert(list, reviews[k])
  end
  return list
end

local function refresh_winbars()
  winbar.refresh(in_order())
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

--- Ends a review: answers the agent (once), fires PiIdeDiffClosed, then removes the UI on the
--- next turn of the loop (it may be ending from inside one of its own autocmds).
--- result: "accepted" (with text), "rejected", or "abandoned" (the core answered it already).
local function finish(r, result, text, trigger)
  if r.done then
    return
  end
  r.done = true
  forget(r)
  if result == "accepted" then
    if r.reply({ "FILE_SAVED", text, r.report_trigger and trigger or nil }) then
      require("pi-ide.diff.reload").when_written(r.path)
    else
      -- The call had ended already (its connection closed meanwhile): nothing was sent.
      result = "abandoned"
      log.notify(("the agent's call for %s had ended: your accept was not sent"):format(display_name(r.path)), vim.log.levels.WARN)
    end
  elseif result == "rejected" then
    r.reply({ "DIFF_REJECTED", r.tab_name, r.report_trigger and trigger or nil })
  end
  log.info("review %s of %s: %s", r.tab_name, r.path, result)
  user_event("PiIdeDiffClosed", { tab_name = r.tab_name, path = r.path, result = result })
  vim.schedule(function()
    ui.close(r)
    refresh_winbars()
  end)
end

--- Accepts the review: the proposal's text as the user left it goes to the agent. A text that
--- is not valid UTF-8 (bytes pasted from elsewhere) cannot be sent: the user is told where, and
--- the review stays open.
function M.accept(r)
  if not (r.ui and vim.api.nvim_buf_is_valid(r.ui.right_buf)) or r.done then
    return
  end
  local text = load.text(r.ui.right_buf)
  local bad = load.invalid_utf8(text)
  if bad then
    log.notify(
      ("the proposal for %s is not valid UTF-8 (%s): fix it, or reject the review"):format(display_name(r.path), bad),
      vim.log.levels.ERROR
    )
    return
  end
  vim.bo[r.ui.right_buf].modified = false
  finish(r, "accepted", text)
end

function M.reject(r)
  finish(r, "rejected")
end

-- Left: the file that will be written, as it is on disk (not the user's buffer, which may hold
-- unsaved edits). The core staged it as it read and diffed it: the user's path itself is never
-- opened here (it may have become a FIFO meanwhile, and reading one would hang Neovim).
local function make_left(r, args)
  local left = vim.api.nvim_create_buf(false, true)
  vim.bo[left].bufhidden = "wipe"
  -- Named for people (see ui.lua); known to the plugin by this variable.
  local tag = r.new_file and "new file" or "on disk"
  vim.b[left].pi_ide_review = { pane = "disk", path = r.path, tab_name = r.tab_name }
  r.names = ui.pane_names(r.path, { tag, "proposal" })
  ui.set_name(left, r.names[tag], r.path, tag)
  if args.old.file then
    -- Decoded as Neovim would decode the file itself; UTF-8 when it is (like the proposal).
    load.read_into(left, args.old.file, { utf8 = args.old.utf8 })
    vim.bo[left].bomb = args.old.bom and true or false
  end
  vim.bo[left].modifiable = false
  vim.bo[left].modified = false
  return left
end

-- Right: the proposal, editable; `:w` in its window accepts it (acwrite: nothing is written).
local function make_right(r, args, built)
  local right = vim.api.nvim_create_buf(false, false)
  vim.bo[right].buftype = "acwrite"
  vim.bo[right].bufhidden = "wipe"
  vim.bo[right].swapfile = false
  vim.b[right].pi_ide_review = { pane = "proposal", path = r.path, tab_name = r.tab_name }
  -- intent.lua keeps this name (a :saveas or :file must not make the proposal a file).
  built.right_name = ui.set_name(right, r.names.proposal, r.path, "proposal")
  load.read_into(right, r.proposal_file, { ff = args.new.crlf and "dos" or "unix", utf8 = true })
  -- Both staged files are read: the core, which owns them, deletes them now (it also does when
  -- the call ends, whichever comes first).
  local native = require("pi-ide.native").get()
  if native then
    native.staged_loaded(r.req)
  end
  load.set_form(right, args.new)
  vim.bo[right].modified = false
  -- The Copilot CLI writes its own proposal after an accept: edits here would be lost.
  vim.bo[right].modifiable = not r.read_only
  return right
end

local function attach(r)
  local group = vim.api.nvim_create_augroup("PiIdeDiff_" .. r.ui.right_buf, { clear = true })
  require("pi-ide.diff.intent").attach(r, group, function()
    M.accept(r)
  end)
  -- The key hints shown depend on the window's width.
  vim.api.nvim_create_autocmd({ "VimResized", "WinResized" }, {
    group = group,
    callback = log.guard("fitting a review's winbar", refresh_winbars),
  })
  -- However the proposal disappears (:q, :tabclose, :bwipe, :bd), that is a rejection.
  vim.api.nvim_create_autocmd({ "BufWipeout", "BufUnload" }, {
    group = group,
    buffer = r.ui.right_buf,
    callback = log.guard("rejecting a closed review", function()
      finish(r, "rejected")
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end),
  })
  local keys = config.values.diff.keys
  for _, buf in ipairs({ r.ui.left_buf, r.ui.right_buf }) do
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

-- Builds the review in turns of the main loop (left pane, proposal, windows and diff, then
-- highlighting), so that even a 5 MiB file never blocks typing or redraws for long in one go.
local function show(r, args)
  if r.done then
    return
  end
  local ft = vim.filetype.match({ filename = r.path }) or ""
  local origin_win = vim.api.nvim_get_current_win()
  local built = { origin_win = origin_win }
  local function step(fn)
    vim.schedule(function()
      if r.done then
        -- Ended while being built (close_tab, a disconnect): drop what exists.
        for _, b in ipairs({ built.left_buf, built.right_buf }) do
          if b and vim.api.nvim_buf_is_valid(b) then
            pcall(vim.api.nvim_buf_delete, b, { force = true })
          end
        end
        return
      end
      local ok, err = xpcall(fn, debug.traceback)
      if not ok then
        log.notify("cannot show the review of " .. display_name(r.path) .. ": " .. tostring(err), vim.log.levels.ERROR)
        r.ui = built
        finish(r, "rejected")
      end
    end)
  end
  built.left_buf = ui.without_autocmds(function()
    return make_left(r, args)
  end)
  step(function()
    built.right_buf = ui.without_autocmds(function()
      return make_right(r, args, built)
    end)
    step(function()
      -- Explicit directions, so 'splitright'/'splitbelow' never flip the panes.
      if vim.api.nvim_win_is_valid(origin_win) then
        vim.api.nvim_set_current_win(origin_win)
      end
      if config.values.diff.layout == "tab" then
        ui.open_window(r, "tab sbuffer", built.left_buf)
        built.tab = vim.api.nvim_get_current_tabpage()
      else
        ui.open_window(r, "rightbelow vertical sbuffer", built.left_buf)
      end
      built.left_win = vim.api.nvim_get_current_win()
      ui.open_window(r, "rightbelow vertical sbuffer", built.right_buf)
      built.right_win = vim.api.nvim_get_current_win()
      r.ui = built
      -- Diff mode on the left is cheap; on the right Neovim computes the diff (the longest
      -- single piece of work): for a large file it gets a turn of its own; a small one is
      -- finished in this turn, so no frame ever shows the panes without the diff.
      local function diff_on(win)
        ui.tolerant(r, function()
          vim.api.nvim_win_call(win, function()
            vim.cmd("diffthis")
          end)
        end, function()
          return vim.wo[win].diff
        end)
      end
      diff_on(built.left_win)
      attach(r)
      local large = (args.new.bytes or 0) > 256 * 1024
      ;(large and step or function(f)
        f()
      end)(function()
        diff_on(built.right_win)
        pcall(ui.to_first_hunk, built.right_win)
        r.shown = true
        refresh_winbars()
        user_event("PiIdeDiffOpened", { tab_name = r.tab_name, path = r.path })
        -- Highlighting is a nicety: a filetype plugin that fails never ends the review.
        step(function()
          pcall(ui.set_filetype, built.right_buf, built.right_win, ft)
          step(function()
            pcall(ui.set_filetype, built.left_buf, built.left_win, ft)
          end)
        end)
      end)
    end)
  end)
end

-- Typing into a terminal (the agent's prompt): the review would take the next keys as
-- Normal-mode commands. It opens once the keyboard has been quiet a moment.
local TERMINAL_QUIET_MS = 700

local function typing_in_terminal()
  return vim.api.nvim_get_mode().mode:sub(1, 1) == "t" and require("pi-ide.typing").within(TERMINAL_QUIET_MS)
end

local show_when_ready

-- A review whose opening was put off: opened now if the user is ready, else put off again. An
-- error rejects it, so that the agent is answered.
local function show_later(r, args)
  local ok, err = xpcall(show_when_ready, debug.traceback, r, args)
  if not ok then
    log.notify("cannot show the review of " .. display_name(r.path) .. ": " .. tostring(err), vim.log.levels.ERROR)
    finish(r, "rejected")
  end
end

-- One shot, armed again while the typing goes on: never two callbacks for one timer.
local function show_when_quiet(r, args)
  local timer = assert(vim.uv.new_timer())
  timer:start(TERMINAL_QUIET_MS, 0, vim.schedule_wrap(function()
    timer:close()
    show_later(r, args)
  end))
end

function show_when_ready(r, args)
  if r.done then
    return
  end
  if typing_in_terminal() then
    show_when_quiet(r, args)
    return
  end
  local typing = require("pi-ide.typing")
  if not typing.busy_mode() then
    show(r, args)
    return
  end
  typing.say_waiting("the review of " .. display_name(r.path))
  -- Once: a second opening would find the staged proposal gone (deleted once read) and
  -- reject the review.
  typing.when_normal("showing a waiting review", function()
    show_later(r, args)
  end)
end

--- openDiff: (args, reply, ev) from the tool dispatcher; answers through `reply` later.
function M.open(args, reply, ev)
  local old = reviews[key(ev.client, args.tab_name)]
  if old then
    -- The same tab_name again: the old call is superseded; it must still be answered.
    finish(old, "rejected")
    ui.close(old)
  end
  local path = buffers.to_path(args.new_file_path)
  local user_buf = buffers.find(path)
  local r = {
    tab_name = args.tab_name,
    key = key(ev.client, args.tab_name),
    read_only = args.read_only == true,
    report_trigger = args.report_trigger == true,
    client = ev.client,
    req = ev.req,
    reply = reply,
    path = path,
    old_path = buffers.to_path(args.old_file_path),
    proposal_file = args.proposal_file,
    stats = nil, -- counted by the core meanwhile; see M.set_stats
    format_changes = args.format_changes,
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
  local early = closed_early[r.key]
  if early ~= nil then
    -- Its agent closed it while the core was staging it: it has given up on this review.
    closed_early[r.key] = nil
    finish(r, "rejected", nil, early or nil)
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
--- none. Returns whether one was open. `trigger`: what the rejection says happened.
--- `opening`: the core is still staging an openDiff of that name (src/opening.rs): it is
--- rejected when it arrives.
function M.close(tab_name, client, trigger, opening)
  local name = key(client, tab_name)
  local r = reviews[name]
  if r then
    finish(r, "rejected", nil, trigger)
    return true
  end
  if opening then
    if vim.tbl_count(closed_early) >= MAX_CLOSED_EARLY then
      closed_early = {} -- names whose openDiff the core refused: never coming
    end
    closed_early[name] = trigger or false
    return true
  end
  return false
end

--- Redraws the winbars (an agent named its session).
function M.refresh()
  refresh_winbars()
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
      local msg = reason
          and ("the review of %s was rejected: the connection was closed (%s)"):format(display_name(r.path), reason)
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
