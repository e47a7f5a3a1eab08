-- A review's windows and buffers: opened even when another plugin's autocmds throw, named for
-- people and uniquely, and taken away again with the user put back where they were.
local log = require("pi-ide.core.log")

local M = {}

-- A review must open even when another plugin's autocmd throws on the events it causes (a
-- broken BufEnter, WinNew or TabNew handler is common): if every review failed, the user could
-- never accept an agent's write. Building our own buffers fires nothing at all; opening windows
-- fires what it fires (statuslines and the like follow it), and an error raised from there is
-- reported once per review, not taken as ours, provided the command did its work.
function M.without_autocmds(fn)
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

function M.report_autocmd_error(r, err)
  if not r.reported_autocmd_error then
    r.reported_autocmd_error = true
    local first = tostring(err):gsub("^.-Autocommands for [^:]*:%s*", ""):match("[^\n]*")
    log.notify(
      ("an autocommand of another plugin failed while the review of %s opened (the review is fine): %s"):format(
        vim.fn.fnamemodify(r.path, ":~:."),
        first
      ),
      vim.log.levels.WARN
    )
  end
end

--- Runs `fn`; an error is reported (not raised) when `done()` says the work was done anyway.
function M.tolerant(r, fn, done)
  local ok, err = pcall(fn)
  if ok then
    return
  end
  if not done() then
    error(err, 0)
  end
  M.report_autocmd_error(r, err)
end

-- Opens a window showing `buf` with `cmd` (":tab sbuffer", ...). When another plugin's autocmd
-- cut the command short (a throwing WinNew leaves an empty window behind), what it made is
-- taken back and the window is opened again without autocmds.
function M.open_window(r, cmd, buf)
  local before = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    before[win] = true
  end
  local from = vim.api.nvim_get_current_win()
  local ok, err = pcall(vim.cmd, cmd .. " " .. buf)
  if vim.api.nvim_get_current_buf() == buf then
    if not ok then
      M.report_autocmd_error(r, err)
    end
    return
  end
  if ok then
    error(("%s did not show the review's buffer"):format(cmd), 0)
  end
  M.without_autocmds(function()
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
  M.report_autocmd_error(r, err)
end

-- A review's panes are named for people: "a.txt (proposal)" and "a.txt (on disk)" read whole in
-- the default tabline, the statusline and :ls! (a name with slashes has its folders cut to one
-- letter in the tabline, and a URL's scheme shows there as "p//"). Such a name is not a file:
-- both buffers have a 'buftype' (Neovim never reads or writes them as files, and leaves their
-- names alone on :cd), they are unlisted (a session never brings them back), and the plugin
-- knows them by b:pi_ide_review, never by their names.

-- Whose is `name`: nil when no buffer has it, else the buffer that has it (as its own short
-- name, or as the full name it would get in this directory).
local function holder(name)
  local full = vim.fn.fnamemodify(name, ":p")
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.fn.bufname(b) == name or vim.api.nvim_buf_get_name(b) == full then
      return b
    end
  end
end

-- The file's name, then with one and two of its folders (relative to the working directory
-- when it is in there): "a.txt", "src/a.txt", "lib/src/a.txt". Never "~" or a leading "/".
local function labels(path)
  local parts = vim.split(vim.fn.fnamemodify(path, ":~:."), "/", { plain = true, trimempty = true })
  if parts[1] == "~" then
    table.remove(parts, 1)
  end
  local out = {}
  for n = 1, math.min(#parts, 3) do
    table.insert(out, table.concat(vim.list_slice(parts, #parts - n + 1), "/"))
  end
  return out
end

--- Names for the panes of a review of `path`, one per tag ("proposal", "on disk"), that no buffer
--- has: "a.txt (proposal)". When another review's pane has one: with the folders that tell the two
--- files apart ("src/a.txt (proposal)"), or for a second review of the same file, a number
--- ("a.txt (proposal 2)").
function M.pane_names(path, tags)
  local function names(label, n)
    local t = {}
    for _, tag in ipairs(tags) do
      t[tag] = ("%s (%s%s)"):format(label, tag, n and (" " .. n) or "")
    end
    return t
  end
  -- nil when all are free; else whether one is a pane of a review of this same file.
  local function clash(t)
    for _, name in pairs(t) do
      local b = holder(name)
      if b then
        local review = vim.b[b].pi_ide_review
        return { same = type(review) == "table" and review.path == path }
      end
    end
  end
  local candidates = labels(path)
  for _, label in ipairs(candidates) do
    local t = names(label)
    local c = clash(t)
    if not c then
      return t
    elseif c.same then
      break
    end
  end
  for n = 2, math.huge do
    local t = names(candidates[1], n)
    if not clash(t) then
      return t
    end
  end
end

--- Names a review's pane `buf`, which b:pi_ide_review already marks; returns the name. `name`
--- came from pane_names, when the pane is named later than its sibling it may have been taken
--- meanwhile: a free one is found the same way.
function M.set_name(buf, name, path, tag)
  if holder(name) then
    name = M.pane_names(path, { tag })[tag]
  end
  vim.api.nvim_buf_set_name(buf, name)
  return name
end

-- A session (:mksession, a session plugin) brings a review's windows back as new, empty buffers
-- with the panes' names: "enew", then "file hello.txt\ (proposal)". Those would be normal
-- buffers, and a :w there would write a file of that name. The review is long gone then: its
-- windows come back unnamed instead.
local function unescape(arg)
  return (arg:gsub("\\(.)", "%1"))
end

local function keep_names_out_of(session)
  local names = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.b[b].pi_ide_review then
      names[vim.fn.bufname(b)] = true
      names[vim.api.nvim_buf_get_name(b)] = true
    end
  end
  if next(names) == nil or vim.fn.filereadable(session) == 0 then
    return
  end
  local lines, kept = vim.fn.readfile(session, "b"), {}
  for _, line in ipairs(lines) do
    local arg = line:match("^file (.+)$")
    local ours = arg and (names[unescape(arg)] or names[vim.fs.normalize(unescape(arg))])
    if not ours then
      table.insert(kept, line)
    end
  end
  if #kept < #lines then
    vim.fn.writefile(kept, session, "b")
  end
end

vim.api.nvim_create_autocmd("SessionWritePost", {
  group = vim.api.nvim_create_augroup("PiIdeReviewSessions", { clear = true }),
  callback = log.guard("keeping a review out of a session", function()
    keep_names_out_of(vim.v.this_session)
  end),
})

--- Takes the review's windows and buffers away and puts the user back where they were when it
--- opened, if they are in the review now.
function M.close(r)
  local ui = r.ui
  if not ui then
    return
  end
  require("pi-ide.features.review.inline").close(r)
  r.ui = nil
  local cur = vim.api.nvim_get_current_win()
  local inside = cur == ui.left_win or cur == ui.right_win
  for _, buf in ipairs({ ui.right_buf, ui.left_buf }) do
    if buf and vim.api.nvim_buf_is_valid(buf) then
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
  if inside and ui.origin_win and vim.api.nvim_win_is_valid(ui.origin_win) then
    vim.api.nvim_set_current_win(ui.origin_win)
  end
end

--- The cursor goes to the first change, as Neovim's diff shows it.
function M.to_first_hunk(win)
  vim.api.nvim_win_call(win, function()
    vim.api.nvim_win_set_cursor(win, { 1, 0 })
    if vim.fn.diff_hlID(1, 1) == 0 then
      vim.cmd("keepjumps normal! ]c")
    end
  end)
end

-- Highlighting comes last: loading a syntax file costs several milliseconds per buffer
-- (Rust's: ~6 ms here), so the panes are shown first and colored on the next turns.
function M.set_filetype(buf, win, ft)
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

return M
