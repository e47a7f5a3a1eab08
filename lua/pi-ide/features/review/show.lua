-- Showing a review: when the user is ready for it (not while they type), and in turns of the
-- main loop (the file on disk, the proposal, windows and diff, then highlighting), so that even
-- a 5 MiB file never blocks typing or redraws for long in one go. The inline layout
-- (inline.lua) builds the same two buffers, hidden, and draws on the file's own once the
-- review's hunks are counted; what it cannot show goes to two panes, said why.
local config = require("pi-ide.core.config")
local log = require("pi-ide.core.log")
local ui = require("pi-ide.features.review.ui")

local M = {}

-- Left: the file that will be written, as it is on disk (not the user's buffer, which may hold
-- unsaved edits). The core staged it as it read and diffed it: the user's path itself is never
-- opened here (it may have become a FIFO meanwhile, and reading one would hang Neovim).
local function make_left(r)
  local load = require("pi-ide.features.review.load")
  local left = vim.api.nvim_create_buf(false, true)
  vim.bo[left].bufhidden = "wipe"
  -- Named for people (see ui.lua); known to the plugin by this variable.
  local tag = r.new_file and "new file" or "on disk"
  vim.b[left].pi_ide_review = { pane = "disk", path = r.path, tab_name = r.tab_name }
  r.names = ui.pane_names(r.path, { tag, "proposal" })
  ui.set_name(left, r.names[tag], r.path, tag)
  if r.old.file then
    -- Decoded as Neovim would decode the file itself; UTF-8 when it is (like the proposal).
    load.read_into(left, r.old.file, { utf8 = r.old.utf8 })
    -- Its final newline, as a buffer of the file would have it (the inline view compares).
    vim.bo[left].eol = load.ends_with_newline(r.old.file)
    vim.bo[left].bomb = r.old.bom and true or false
  end
  vim.bo[left].modifiable = false
  vim.bo[left].modified = false
  return left
end

-- Right: the proposal, editable; `:w` in its window accepts it (acwrite: nothing is written).
local function make_right(r, built)
  local load = require("pi-ide.features.review.load")
  local right = vim.api.nvim_create_buf(false, false)
  vim.bo[right].buftype = "acwrite"
  vim.bo[right].bufhidden = "wipe"
  vim.bo[right].swapfile = false
  vim.b[right].pi_ide_review = { pane = "proposal", path = r.path, tab_name = r.tab_name }
  -- intent.lua keeps this name (a :saveas or :file must not make the proposal a file).
  built.right_name = ui.set_name(right, r.names.proposal, r.path, "proposal")
  load.read_into(right, r.proposal_file, { ff = r.new.crlf and "dos" or "unix", utf8 = true })
  -- Both staged files are read: the core, which owns them, deletes them now (it also does when
  -- the review ends, whichever comes first).
  local native = require("pi-ide.core.native").get()
  if native then
    native.staged_loaded(r.req)
  end
  load.set_form(right, r.new)
  vim.bo[right].modified = false
  return right
end

local function attach(r, view)
  local arming = require("pi-ide.features.review.arming")
  local group = vim.api.nvim_create_augroup("PiIdeReview_" .. r.ui.right_buf, { clear = true })
  -- A typed accept counts only once the user has come to the review (arming.lua).
  local function typed_accept()
    if arming.allows(r) then
      view.accept(r)
    end
  end
  require("pi-ide.features.review.intent").attach(r, group, typed_accept)
  vim.api.nvim_create_autocmd("WinEnter", {
    group = group,
    callback = function()
      local win = vim.api.nvim_get_current_win()
      if r.ui and (win == r.ui.left_win or win == r.ui.right_win) then
        arming.came(r, false)
        view.refresh()
      end
    end,
  })
  -- The key hints shown depend on the window's width.
  vim.api.nvim_create_autocmd({ "VimResized", "WinResized" }, {
    group = group,
    callback = log.guard("fitting a review's winbar", view.refresh),
  })
  -- However the proposal disappears (:q, :tabclose, :bwipe, :bd), that is a rejection.
  vim.api.nvim_create_autocmd({ "BufWipeout", "BufUnload" }, {
    group = group,
    buffer = r.ui.right_buf,
    callback = log.guard("rejecting a closed review", function()
      view.reject(r)
      pcall(vim.api.nvim_del_augroup_by_id, group)
    end),
  })
  local keys = config.values.review.keys
  for _, buf in ipairs({ r.ui.left_buf, r.ui.right_buf }) do
    for action, lhs in pairs({ accept = keys.accept, reject = keys.reject }) do
      if lhs then
        vim.keymap.set("n", lhs, action == "accept" and typed_accept or function()
          view.reject(r)
        end, { buffer = buf, nowait = true, desc = ("pi-ide: %s this proposal"):format(action) })
      end
    end
  end
  require("pi-ide.features.review.hunk_keys").attach(r, group, view)
end

-- Diff mode in a window; another plugin's autocmd failing on the way is only reported.
local function diff_on(r, win)
  ui.tolerant(r, function()
    vim.api.nvim_win_call(win, function()
      vim.cmd("diffthis")
    end)
  end, function()
    return vim.wo[win].diff
  end)
end

-- Neovim's diff of the right pane is the longest single piece of work: for a large file it gets
-- a turn of its own; a small one is finished with the windows, so that no frame ever shows the
-- panes without the diff.
local LARGE = 256 * 1024

local function right_diff(r, view)
  if r.ui.right_diffed then
    return
  end
  r.ui.right_diffed = true
  diff_on(r, r.ui.right_win)
  pcall(ui.to_first_hunk, r.ui.right_win)
  require("pi-ide.features.review.arming").drawn(r)
  if r.shown then
    return view.refresh() -- moved from the inline view: shown already
  end
  view.shown(r)
end

-- "review of {file} {what}", on one line (a longer one would stop the user at "Press ENTER"
-- and eat their next key): the file's name alone when its path is too long.
local function say(r, what)
  local msg = "pi-ide.nvim: review of %s " .. what
  local name = require("pi-ide.features.review.winbar").display_name(r.path)
  if vim.fn.strdisplaywidth(msg:format(name)) >= vim.v.echospace then
    name = vim.fn.fnamemodify(r.path, ":t")
  end
  log.info(msg, name)
  vim.notify(msg:format(name), vim.log.levels.INFO)
end

-- A review that opens without the focus leaves the user where they are (`tab`, `win`), and
-- says in one line where it is.
local function stay(r, tab, win)
  if vim.api.nvim_tabpage_is_valid(tab) then
    vim.api.nvim_set_current_tabpage(tab)
  end
  if vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_set_current_win(win)
  end
  local where = r.ui.tab and ("in tab %d"):format(vim.api.nvim_tabpage_get_number(r.ui.tab)) or "beside"
  say(r, "waits " .. where .. ": :PiIde review")
end

local function open_windows(r, built, view)
  local arming = require("pi-ide.features.review.arming")
  local focus = arming.takes_focus(r)
  local here_tab, here_win = vim.api.nvim_get_current_tabpage(), vim.api.nvim_get_current_win()
  -- Explicit directions, so 'splitright'/'splitbelow' never flip the panes.
  if vim.api.nvim_win_is_valid(built.origin_win) then
    vim.api.nvim_set_current_win(built.origin_win)
  end
  if config.values.review.layout ~= "vsplit" then -- "inline" goes to a tab when it cannot
    ui.open_window(r, "tab sbuffer", built.left_buf)
    built.tab = vim.api.nvim_get_current_tabpage()
  else
    ui.open_window(r, "rightbelow vertical sbuffer", built.left_buf)
  end
  built.left_win = vim.api.nvim_get_current_win()
  ui.open_window(r, "rightbelow vertical sbuffer", built.right_buf)
  built.right_win = vim.api.nvim_get_current_win()
  r.ui = built
  diff_on(r, built.left_win)
  attach(r, view)
  arming.opened(r, focus)
  if not focus then
    stay(r, here_tab, here_win)
  end
  if (r.new.bytes or 0) <= LARGE then
    right_diff(r, view)
  end
end

-- The steps that show the two panes, one per turn of the loop. Highlighting is a nicety: a
-- filetype plugin that fails never ends the review.
local function pane_steps(r, built, view)
  local ft = vim.filetype.match({ filename = r.path }) or ""
  return {
    function()
      open_windows(r, built, view)
    end,
    function()
      right_diff(r, view)
    end,
    function()
      pcall(ui.set_filetype, built.right_buf, built.right_win, ft)
    end,
    function()
      pcall(ui.set_filetype, built.left_buf, built.left_win, ft)
    end,
  }
end

-- The proposal's buffer: built, and its hunks placed on it (now, or when the core's count
-- arrives, if the user has not edited it by then).
local function proposal_step(r, built)
  return function()
    built.right_buf = ui.without_autocmds(function()
      return make_right(r, built)
    end)
    -- The proposal as its agent sent it.
    r.proposal_tick = vim.api.nvim_buf_get_changedtick(built.right_buf)
    r.proposal_bufs = { built.left_buf, built.right_buf }
    require("pi-ide.features.review.hunks").track(r, built.left_buf, built.right_buf)
  end
end

local run

-- Why review `r` is not shown inline, on one line.
local function say_panes(r, why)
  say(r, "in two panes: " .. why)
end

-- Review `r` goes to two panes, said why (`why`), once the user is ready (said then: a
-- message given in Insert mode would be gone under "-- INSERT --").
local function to_panes(r, built, view, why)
  local function go()
    if not r.ended then
      say_panes(r, why)
      built.origin_win = vim.api.nvim_get_current_win()
      -- The diff is against the disk; the winbar says when the user's buffer differs now.
      local user_buf = require("pi-ide.core.buffers").find(r.path)
      r.user_edits = user_buf ~= nil and vim.api.nvim_buf_is_loaded(user_buf) and vim.bo[user_buf].modified
      run(r, built, pane_steps(r, built, view), 1, view)
    end
  end
  local typing = require("pi-ide.core.typing")
  if typing.busy_mode() then
    r.waited = true
    typing.say_waiting("the review of " .. vim.fn.fnamemodify(r.path, ":t") .. " in two panes")
    return typing.when_normal("moving a review to two panes", go)
  end
  go()
end

-- Inline, once the hunks are counted (else when they are: init.lua calls `r.when_counted`)
-- and the user is not typing; to two panes when it cannot be.
local function inline_step(r, built, view)
  local inline = require("pi-ide.features.review.inline")
  local function step()
    if r.ended then
      return
    end
    if not r.hunks then
      r.when_counted = function()
        run(r, built, { step }, 1, view)
      end
      return
    end
    local typing = require("pi-ide.core.typing")
    if typing.busy_mode() then
      r.waited = true
      return typing.when_normal("showing a review inline", function()
        run(r, built, { step }, 1, view)
      end)
    end
    local why, file = inline.cannot_now(r)
    if why then
      return to_panes(r, built, view, why)
    end
    r.ui = built
    attach(r, view)
    -- Drawn where the user is: it takes no focus, but is seen before it takes an accept.
    local arming = require("pi-ide.features.review.arming")
    arming.opened(r, true)
    inline.show(r, file, view, function(moved_why)
      to_panes(r, built, view, moved_why)
    end)
    arming.drawn(r)
    view.shown(r)
  end
  return step
end

-- The steps after the left pane.
local function steps(r, built, view)
  local list = { proposal_step(r, built) }
  if built.wants_inline then
    table.insert(list, inline_step(r, built, view))
  else
    vim.list_extend(list, pane_steps(r, built, view))
  end
  return list
end

-- Runs step `i` and the rest, each on a turn of its own. A review that ended meanwhile (its
-- agent closed it, its client left) drops what was built; a step that fails rejects it.
function run(r, built, list, i, view)
  if not list[i] then
    return
  end
  vim.schedule(function()
    if r.ended then
      for _, b in ipairs({ built.left_buf, built.right_buf }) do
        if b and vim.api.nvim_buf_is_valid(b) then
          pcall(vim.api.nvim_buf_delete, b, { force = true })
        end
      end
      return
    end
    local ok, err = xpcall(list[i], debug.traceback)
    if not ok then
      r.ui = r.ui or built
      return view.failed(r, err)
    end
    run(r, built, list, i + 1, view)
  end)
end

local function show(r, view)
  if r.ended then
    return
  end
  local built = { origin_win = vim.api.nvim_get_current_win() }
  built.left_buf = ui.without_autocmds(function()
    return make_left(r)
  end)
  if config.values.review.layout == "inline" then
    local why = require("pi-ide.features.review.inline").cannot(r)
    built.wants_inline = not why
    if why then
      say_panes(r, why)
    end
  end
  run(r, built, steps(r, built, view), 1, view)
end

-- Typing into a terminal (the agent's prompt): the review would take the next keys as
-- Normal-mode commands. It opens once the keyboard has been quiet a moment.
local TERMINAL_QUIET_MS = 700

local function typing_in_terminal()
  return vim.api.nvim_get_mode().mode:sub(1, 1) == "t" and require("pi-ide.core.typing").within(TERMINAL_QUIET_MS)
end

-- A review whose opening was put off: opened now if the user is ready, else put off again. An
-- error rejects it, so that the agent is answered.
local function later(r, view)
  local ok, err = xpcall(M.when_ready, debug.traceback, r, view)
  if not ok then
    view.failed(r, err)
  end
end

--- Shows review `r` once the user is ready: at once in Normal mode; after a quiet keyboard in
--- the agent's terminal; on the return to Normal mode from Insert, Visual or Command-line mode.
--- `view`: the review's view (init.lua), told what happens.
function M.when_ready(r, view)
  if r.ended then
    return
  end
  if typing_in_terminal() then
    -- Once the keyboard is quiet it opens with the focus: the agent's answer to that prompt.
    -- One shot, armed again while the typing goes on: never two callbacks for one timer.
    local timer = assert(vim.uv.new_timer())
    timer:start(TERMINAL_QUIET_MS, 0, vim.schedule_wrap(function()
      timer:close()
      later(r, view)
    end))
    return
  end
  local typing = require("pi-ide.core.typing")
  if not typing.busy_mode() then
    return show(r, view)
  end
  r.waited = true
  typing.say_waiting("the review of " .. require("pi-ide.features.review.winbar").display_name(r.path))
  -- Once: a second opening would find the staged proposal gone (deleted once read) and
  -- reject the review.
  typing.when_normal("showing a waiting review", function()
    later(r, view)
  end)
end

return M
