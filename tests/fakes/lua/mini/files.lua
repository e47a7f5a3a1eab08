-- A fake mini.files (not installed here), for tests/context/explorers.rs: the documented API
-- function pi-ide.nvim calls (MiniFiles.get_fs_entry(buf_id, line), returning {fs_type, name,
-- path} or nil), over a buffer of filetype "minifiles" listing a folder, one name a line.
-- Like mini.files, it sets the global MiniFiles.
local MiniFiles = {}

local dirs = {}

--- MiniFiles.open(path): shows the folder `path` in the current window.
function MiniFiles.open(path)
  local names = {}
  for name in vim.fs.dir(path) do
    table.insert(names, name)
  end
  table.sort(names)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, names)
  dirs[buf] = path:gsub("/$", "")
  vim.api.nvim_set_current_buf(buf)
  vim.bo[buf].filetype = "minifiles"
  return buf
end

function MiniFiles.get_fs_entry(buf_id, line)
  buf_id = (buf_id == nil or buf_id == 0) and vim.api.nvim_get_current_buf() or buf_id
  if not dirs[buf_id] then
    error(("(mini.files) `buf_id` is not an identifier of a directory buffer: %s"):format(buf_id))
  end
  line = line or vim.api.nvim_win_get_cursor(0)[1]
  local name = vim.api.nvim_buf_get_lines(buf_id, line - 1, line, false)[1]
  if not name or name == "" then
    return nil
  end
  local path = dirs[buf_id] .. "/" .. name
  return { fs_type = vim.fn.isdirectory(path) == 1 and "directory" or "file", name = name, path = path }
end

_G.MiniFiles = MiniFiles
return MiniFiles
