-- Reading and writing a file of ours whole. Only a regular file is opened: a FIFO or a device swapped in
-- for it would block Neovim on open, and a link may lead anywhere.
local M = {}

--- The bytes of regular file `path` (not a link), or nil and why not; one larger than
--- `max_bytes`, when given, is not read.
function M.read(path, max_bytes)
  local st = vim.uv.fs_lstat(path)
  if not st then
    return nil, path .. " does not exist"
  end
  if st.type ~= "file" then
    return nil, path .. " is not a regular file"
  end
  if max_bytes and st.size > max_bytes then
    return nil, ("%s is larger than %d bytes"):format(path, max_bytes)
  end
  local f, err = io.open(path, "rb")
  if not f then
    return nil, err
  end
  local bytes = f:read("*a")
  f:close()
  return bytes
end

--- Writes `path` whole: a temp file beside it (this Neovim's), renamed over it, so that a
--- reader never sees half of it. Returns true, or nil and why not.
function M.write(path, bytes)
  local tmp = ("%s.%d.tmp"):format(path, vim.fn.getpid())
  local f, err = io.open(tmp, "wb")
  if not f then
    return nil, err
  end
  local ok, write_err = f:write(bytes)
  f:close()
  if not ok then
    os.remove(tmp)
    return nil, write_err
  end
  return os.rename(tmp, path)
end

return M
