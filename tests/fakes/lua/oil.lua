-- A fake oil.nvim (not installed here), for tests/context/explorers.rs: the documented API
-- functions pi-ide.nvim calls (oil's doc/api.md: get_current_dir(bufnr), get_cursor_entry(),
-- get_entry_on_line(bufnr, lnum), returning oil.Entry tables {id, name, type}) over a buffer
-- of filetype "oil" listing a folder as oil does: "../" first, folders ending with "/".
local M = {}

local dirs = {}

local function buf_of(bufnr)
  return (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
end

--- oil.open(dir): shows `dir` in the current window.
function M.open(dir)
  dir = dir:gsub("/?$", "/")
  local lines = {}
  for name, kind in vim.fs.dir(dir) do
    table.insert(lines, kind == "directory" and name .. "/" or name)
  end
  table.sort(lines)
  table.insert(lines, 1, "../")
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_name(buf, "oil://" .. dir)
  dirs[buf] = dir
  vim.api.nvim_set_current_buf(buf)
  vim.bo[buf].filetype = "oil"
  return buf
end

function M.get_current_dir(bufnr)
  return dirs[buf_of(bufnr)]
end

function M.get_entry_on_line(bufnr, lnum)
  local line = vim.api.nvim_buf_get_lines(buf_of(bufnr), lnum - 1, lnum, false)[1]
  if not line or line == "" then
    return nil
  end
  return { id = lnum, name = (line:gsub("/$", "")), type = line:match("/$") and "directory" or "file" }
end

function M.get_cursor_entry()
  return M.get_entry_on_line(0, vim.api.nvim_win_get_cursor(0)[1])
end

return M
