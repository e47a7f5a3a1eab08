-- A review's windows and buffers: opened even when another plugin's autocmds throw, named
-- uniquely, and taken away again with the user put back where they were.
local log = require("pi-ide.log")

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

--- Names a buffer uniquely (a leftover of the same name gets a number added); returns the name.
function M.set_name(buf, name)
  local candidate, n = name, 1
  while vim.fn.bufexists(candidate) == 1 do
    n = n + 1
    candidate = ("%s (%d)"):format(name, n)
  end
  vim.api.nvim_buf_set_name(buf, candidate)
  return candidate
end

--- Takes the review's windows and buffers away and puts the user back where they were when it
--- opened, if they are in the review now.
function M.close(r)
  local ui = r.ui
  if not ui then
    return
  end
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
