-- :PiIde changes [turn]: every file that differs from a turn's checkpoint, one quickfix entry
-- each (which turn and agent changed it, whether a review showed it, whether you wrote it in
-- Neovim), and each file as a two-pane view in a tab of its own: the checkpoint on the left
-- (read-only), the file itself on the right, in diff mode, so `do` or :PiIde hunk reject
-- (hunks.lua) takes a hunk back and :w writes the file — an ordinary write of the user's.
local checkpoints = require("pi-ide.features.checkpoints")
local hunks = require("pi-ide.features.checkpoints.hunks")

local M = {}

local STATUS = { A = "created", M = "changed", D = "deleted", T = "changed kind" }

-- A file's size part: its lines, or why there are none.
local function size_of(f)
  if f.lost then
    return "the checkpoint lost its text"
  elseif f.over_cap then
    return "over the size cap: not recorded"
  end
  return f.binary and "binary" or f.diffed and ("+%d −%d"):format(f.added, f.removed) or "large: not diffed"
end

local function describe(f, since)
  local by = #f.turns > 0
      and ("turn %s %s"):format(table.concat(f.turns, ","), table.concat(f.agents, ","))
    or "outside any agent's turn"
  local status = f.over_cap and "grew past the size cap" or STATUS[f.status] or f.status
  local parts = { status, by }
  -- A file that runs code or holds secrets: fingerprinted, not recorded, so never undone.
  if f.guarded then
    table.insert(parts, f.guarded .. ": not undoable")
    return table.concat(parts, " · ")
  end
  local wrote = checkpoints.written(f.path)
  if f.other_text then
    -- The user saw a text of it (a review they accepted), and the turn left another.
    table.insert(parts, "other text than you accepted")
  elseif wrote and wrote >= since then
    table.insert(parts, "edited in Neovim")
  elseif f.unreviewed then
    table.insert(parts, "without review")
  end
  return ("%s (%s)"):format(table.concat(parts, " · "), size_of(f))
end

-- The file's full name: a guarded one outside the folder (a parent's .git) is absolute.
local function full(folder, path)
  return path:sub(1, 1) == "/" and path or folder .. "/" .. path
end

local function items(folder, files, since)
  local out = {}
  for _, f in ipairs(files) do
    table.insert(out, {
      filename = full(folder, f.path),
      lnum = f.status == "D" and 1 or f.line,
      col = 1,
      text = describe(f, since),
      user_data = { pi_ide_change = f },
    })
  end
  return out
end

-- The view's tab, if it is still open.
local view = { tab = nil, left = nil, right = nil }

local function tab_alive()
  return view.tab and vim.api.nvim_tabpage_is_valid(view.tab)
end

-- What the left pane says instead of a text it has not: nil when it shows the text.
local function no_text(f, missing)
  if missing then
    return ("(%s)"):format(missing)
  elseif f.guarded then
    return ("(%s: pi-ide keeps a fingerprint of it, not its text, so it cannot show or undo the change; look at it yourself)"):format(f.guarded)
  elseif f.binary then
    return "(binary file: :PiIde undo puts it back whole)"
  end
end

-- A text whose every line ends in CRLF: shown as the file's buffer shows it (without the CRs),
-- so that the two panes diff line for line and a hunk taken back gets no stray CR.
local function crlf(bytes)
  return bytes ~= nil and bytes:find("\r\n") ~= nil and not bytes:find("[^\r]\n") and not bytes:find("^\n")
end

local function checkpoint_buffer(turn, f, bytes, missing)
  local buf = vim.api.nvim_create_buf(false, true)
  local note = no_text(f, missing)
  local lines = vim.split(note or bytes or "", "\n", { plain = true })
  if lines[#lines] == "" and #lines > 1 then
    table.remove(lines)
  end
  if not note and crlf(bytes) then
    lines = vim.tbl_map(function(l)
      return (l:gsub("\r$", ""))
    end, lines)
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, (bytes == nil and not note) and {} or lines)
  vim.bo[buf].bufhidden, vim.bo[buf].modifiable = "wipe", false
  -- Named as a review's panes are ("a.txt (proposal)"): what a tabline shows reads well.
  pcall(vim.api.nvim_buf_set_name, buf, ("%s (turn %d)"):format(f.path, turn.n))
  local ft = vim.filetype.match({ filename = f.path, buf = buf })
  if ft then
    vim.bo[buf].filetype = ft
  end
  return buf
end

local function winbars(turn, f, shown)
  local when = os.date("%H:%M", math.floor(turn.started_ms / 1000))
  local left = (" turn %d (%s) started %s: as it was"):format(turn.n, turn.agent, when)
  local reject = require("pi-ide.core.config").values.review.keys.reject_hunk
  local label = reject and reject:gsub("<[Ll]eader>", vim.g.mapleader == " " and "<Space>" or vim.g.mapleader or "\\")
  local right = shown and (" now: %s takes a hunk back, :w writes"):format(label and (label .. " or do") or "do") or " now"
  vim.wo[view.left].winbar = left:gsub("%%", "%%%%")
  vim.wo[view.right].winbar = right
end

-- :cnext, :cprev, :cc in the view's tab load the next file in one of its windows: the view
-- follows, with that file's checkpoint beside it.
local function follow(ev)
  local win = vim.api.nvim_get_current_win()
  if not tab_alive() or (win ~= view.left and win ~= view.right) or not view.turn then
    return
  end
  local path = vim.api.nvim_buf_get_name(ev.buf)
  if path == view.shown then
    return
  end
  local list = vim.fn.getqflist({ context = 0, items = 0 })
  if not (type(list.context) == "table" and list.context.pi_ide_changes) then
    return
  end
  for _, item in ipairs(list.items) do
    local f = type(item.user_data) == "table" and item.user_data.pi_ide_change
    if f and full(view.folder, f.path) == path then
      return M.open(view.turn, f, view.folder)
    end
  end
end

-- Shows entry `f` (of turn `turn`) in the view's tab, opening the tab the first time;
-- `missing`: why its checkpoint's text cannot be shown.
local function show(turn, f, bytes, folder, missing)
  view.turn, view.folder, view.shown = turn, folder, full(folder, f.path)
  if not tab_alive() then
    vim.cmd("tabnew")
    view.tab, view.right = vim.api.nvim_get_current_tabpage(), vim.api.nvim_get_current_win()
    vim.cmd("leftabove vsplit")
    view.left = vim.api.nvim_get_current_win()
    vim.t.pi_ide_changes = true
    local group = vim.api.nvim_create_augroup("PiIdeChangesView", { clear = true })
    vim.api.nvim_create_autocmd("BufWinEnter", { group = group, callback = vim.schedule_wrap(function(ev)
      if vim.api.nvim_buf_is_valid(ev.buf) then
        follow(ev)
      end
    end) })
    -- Closed: the file's buffer gets its keys back (once the tab is gone: 0.10 still has it).
    vim.api.nvim_create_autocmd("TabClosed", { group = group, callback = vim.schedule_wrap(function()
      if not tab_alive() then
        hunks.detach()
      end
    end) })
  end
  vim.api.nvim_set_current_tabpage(view.tab)
  local opened, err = pcall(vim.api.nvim_win_call, view.right, function()
    vim.cmd("diffoff | edit " .. vim.fn.fnameescape(full(folder, f.path)))
  end)
  if not opened then
    return vim.notify("pi-ide.nvim: " .. tostring(err):gsub("^.-Vim[^:]*:", ""), vim.log.levels.ERROR)
  end
  vim.api.nvim_win_set_buf(view.left, checkpoint_buffer(turn, f, bytes, missing))
  local diffed = not no_text(f, missing)
  hunks.attach(vim.api.nvim_win_get_buf(view.left), vim.api.nvim_win_get_buf(view.right), diffed)
  winbars(turn, f, diffed)
  if diffed then
    for _, w in ipairs({ view.left, view.right }) do
      vim.api.nvim_win_call(w, function()
        vim.cmd("diffthis")
      end)
    end
  end
  vim.api.nvim_set_current_win(view.right)
  pcall(vim.api.nvim_win_set_cursor, view.right, { math.max(f.line or 1, 1), 0 })
end

--- Opens change `f` of the list (its checkpoint's text comes from the worker first), then
--- calls `shown()` if given.
function M.open(turn, f, folder, shown)
  if f.guarded then
    show(turn, f, nil, folder)
    return shown and shown()
  end
  checkpoints.run({ op = "content", n = turn.n, path = f.path, folder = folder }, function(ok, bytes)
    -- A text the checkpoint lost is said, in the pane and once as a message, never shown empty.
    local missing = not ok and tostring(bytes) or nil
    if missing then
      vim.notify("pi-ide.nvim: " .. missing, vim.log.levels.WARN)
    end
    show(turn, f, ok and bytes or nil, folder, missing)
    if shown then
      shown()
    end
  end)
end

-- <CR> in our quickfix list opens the entry as the two-pane view.
local function map_quickfix(turn, folder)
  local qf = vim.fn.getqflist({ winid = 0 }).winid
  if qf == 0 then
    return
  end
  vim.keymap.set("n", "<CR>", function()
    local list = vim.fn.getqflist({ context = 0, items = 0 })
    local item = list.items[vim.fn.line(".")]
    local ours = type(list.context) == "table" and list.context.pi_ide_changes
    if not ours or not item or not item.user_data.pi_ide_change then
      return vim.cmd("execute \"normal! \\<CR>\"")
    end
    M.open(turn, item.user_data.pi_ide_change, folder)
  end, { buffer = vim.api.nvim_win_get_buf(qf), desc = "pi-ide.nvim: open the change as a two-pane view" })
end

-- The pending changes (features/pending/), first in the list: each opens as the file itself,
-- where its hunks are drawn and decided.
local function pending_items()
  local out = {}
  for _, p in ipairs(require("pi-ide.features.pending").list()) do
    local what = ("pending: %s by %s%s · %d hunk%s · :PiIde accept|reject or :PiIde hunk in its window"):format(
      p.kind, p.agent, p.turn and (" in turn %d"):format(p.turn) or "", p.hunks, p.hunks == 1 and "" or "s")
    table.insert(out, { filename = p.path, lnum = 1, col = 1, text = what, user_data = { pi_ide_pending = true } })
  end
  return out
end

-- The list: the pending changes first (a file the turn lists too keeps the turn's entry, moved
-- up), then the rest of turn `turn`'s files (none when it is nil).
local function list(folder, turn, files)
  local first, rest, listed = {}, {}, {}
  for _, item in ipairs(turn and items(folder, files, turn.started_ms) or {}) do
    local p = require("pi-ide.features.pending").entry(item.filename)
    table.insert(p and first or rest, item)
    listed[vim.fs.normalize(item.filename)] = true
  end
  for _, item in ipairs(pending_items()) do
    if not listed[item.filename] then
      table.insert(first, item)
    end
  end
  local all = vim.list_extend(first, rest)
  local context = { pi_ide_changes = { turn = turn and turn.n, folder = folder } }
  local title = turn and ("PiIde changes since turn %d (%s)"):format(turn.n, turn.agent) or "PiIde pending changes"
  vim.fn.setqflist({}, " ", { title = title, items = all, context = context })
  return #all
end

-- Only the pending changes, in the list (no turn to show, or nothing changed since it).
local function only_pending(folder)
  if #pending_items() == 0 then
    return false
  end
  list(folder, nil, {})
  vim.cmd("botright copen")
  vim.cmd.cfirst()
  return true
end

--- :PiIde changes [turn|keep|undo]: keep and undo decide every pending change at once.
function M.run(arg)
  if arg == "keep" or arg == "undo" then
    return require("pi-ide.features.pending.decide").all(arg == "keep" and "accept" or "reject")
  end
  local n = arg and tonumber(arg)
  if arg and not n then
    return vim.notify(("pi-ide.nvim: :PiIde changes takes a turn's number, keep or undo (got '%s')"):format(arg), vim.log.levels.ERROR)
  end
  n = n or checkpoints.warned_turn()
  local folder = checkpoints.folder()
  checkpoints.run({ op = "changes", n = n, folder = folder }, function(ok, r)
    if not ok then
      return only_pending(folder) or vim.notify("pi-ide.nvim: " .. tostring(r), vim.log.levels.ERROR)
    end
    checkpoints.seen()
    local turn = r.turn
    if #r.files == 0 then
      return only_pending(folder) or vim.notify(("pi-ide.nvim: nothing changed since turn %d (%s)"):format(turn.n, turn.agent), vim.log.levels.INFO)
    end
    local count = list(folder, turn, r.files)
    require("pi-ide.core.events").fire("PiIdeChanges", { turn = turn.n, count = count })
    M.open(turn, r.files[1], folder, function()
      vim.cmd("botright copen")
      map_quickfix(turn, folder)
      vim.api.nvim_set_current_win(view.right)
    end)
  end)
end

return M
