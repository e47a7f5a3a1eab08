-- Finding buffers by file path, and file URIs. Paths are compared exactly (after making them
-- absolute), never through bufnr()'s pattern matching.
local M = {}

--- An absolute, normalised path from a file URI or a path. Pure text: a path the agent chose
--- is never looked at on disk here (a hung mount would freeze Neovim).
function M.to_path(uri_or_path)
  local path = uri_or_path
  if path:match("^file:") then
    path = vim.uri_to_fname(path)
  end
  if not path:match("^[/~]") then
    path = vim.fn.getcwd() .. "/" .. path
  end
  return vim.fs.normalize(path, { expand_env = false })
end

--- The buffer showing exactly this file, or nil. Falls back to comparing real paths so that a
--- file opened through a symlink is still found; the agent's path is resolved by the core, off
--- the main thread, within a short deadline (a path on a hung mount is simply not found).
function M.find(path)
  path = M.to_path(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf) == path and not M.is_review(buf) then
      return buf
    end
  end
  local native = require("pi-ide.core.native").get()
  local real = native and native.realpath(path)
  if not real then
    return nil
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    -- The user's own buffers: their files were opened by the user.
    if M.is_file(buf) and vim.uv.fs_realpath(vim.api.nvim_buf_get_name(buf)) == real then
      return buf
    end
  end
end

--- Whether a buffer is one of a review's panes (features/review/ marks them; their names, like
--- "a.txt (proposal)", are for people and are never parsed).
function M.is_review(buf)
  return vim.b[buf].pi_ide_review ~= nil
end

--- Whether a buffer is a real file: a normal buffer with a name that is not a URL (terminal,
--- help, quickfix, scratch and oil:// buffers are not, nor a review's panes, whatever their
--- 'buftype' has become).
function M.is_file(buf)
  if vim.api.nvim_get_option_value("buftype", { buf = buf }) ~= "" or M.is_review(buf) then
    return false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= "" and not name:match("^%a[%w+.-]*://")
end

--- The file URI of a buffer, or nil for buffers that are not files.
function M.uri(buf)
  return M.is_file(buf) and vim.uri_from_fname(vim.api.nvim_buf_get_name(buf)) or nil
end

--- Reloads buffer `buf` from disk, without the prompt 'noautoread' would show (for a file
--- written behind Neovim: an agent's write, an undo). The caller leaves modified buffers alone.
function M.reload(buf)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("setlocal autoread | silent! checktime " .. buf .. " | setlocal autoread<")
  end)
end

-- vim.str_utfindex takes an encoding from 0.11 on (the old form is deprecated there).
local NEW_UTFINDEX = vim.fn.has("nvim-0.11") == 1

--- A byte column on a line as a UTF-16 code-unit offset (what LSP and the protocol count).
function M.utf16_col(line, col)
  if col <= 0 or not line or not line:find("[\128-\255]") then
    return col
  end
  col = math.min(col, #line)
  if NEW_UTFINDEX then
    return vim.str_utfindex(line, "utf-16", col, false)
  end
  local _, u16 = vim.str_utfindex(line, col)
  return u16
end

return M
