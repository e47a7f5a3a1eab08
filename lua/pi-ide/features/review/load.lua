-- Byte-exact text in and out of a review's buffers. The core staged the proposal as the agent
-- sent it (UTF-8 JSON text: a byte order mark kept aside, line breaks and the final newline
-- noted), and the file on disk beside it. The proposal is read as UTF-8 whatever the user's
-- 'fileencodings' (latin1 or cp932 first would double-encode it), and what the user accepts is
-- the buffer's text with exactly its 'fileformat', 'eol' and 'bomb'.
local M = {}

local BOM = "\239\187\191"

-- Loads a file into a buffer with :read, at C speed, without an undo step (undoing must not
-- empty the proposal) and without touching the alternate file. 'cpoptions' loses its "a" for
-- the read: with it, :read leaves a hidden buffer behind for every file it reads (~20 KiB
-- each; the soak test found it). `opts.ff`: "unix"/"dos"; `opts.utf8`: read as UTF-8.
function M.read_into(buf, path, opts)
  local cpo = vim.o.cpoptions
  vim.o.cpoptions = cpo:gsub("a", "")
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    local undolevels = vim.bo[buf].undolevels
    vim.bo[buf].undolevels = -1
    local args = (opts.ff and ("++ff=" .. opts.ff .. " ") or "") .. (opts.utf8 and "++enc=utf-8 " or "")
    vim.cmd(("silent keepalt keepjumps 0read ++edit %s%s"):format(args, vim.fn.fnameescape(path)))
    vim.cmd("silent keepjumps $delete _")
    vim.bo[buf].undolevels = undolevels
  end)
  vim.o.cpoptions = cpo
  if not ok then
    error(err, 0)
  end
end

--- Whether the file at `path` ends with a line break (an empty or unreadable one: true, as
--- Neovim takes it).
function M.ends_with_newline(path)
  local fd = vim.uv.fs_open(path, "r", 0)
  if not fd then
    return true
  end
  local size = (vim.uv.fs_fstat(fd) or {}).size or 0
  local last = size > 0 and vim.uv.fs_read(fd, 1, size - 1) or "\n"
  vim.uv.fs_close(fd)
  return last == "\n"
end

--- Sets how the text is written back: line breaks, final newline, byte order mark.
function M.set_form(buf, form)
  vim.bo[buf].fileformat = form.crlf and "dos" or "unix"
  vim.bo[buf].eol = form.eol
  vim.bo[buf].fixeol = form.eol
  vim.bo[buf].bomb = form.bom and true or false
  vim.bo[buf].fileencoding = "utf-8"
end

local separators = { dos = "\r\n", mac = "\r", unix = "\n" }

-- "--No lines in buffer--": what is left after deleting every line, which Neovim writes as an
-- empty file (one empty line is written as a line break).
local function empty(buf)
  return vim.api.nvim_buf_call(buf, function()
    return vim.fn.wordcount().bytes == 0
  end)
end

--- The buffer's lines; none for an empty buffer ("--No lines in buffer--", not one empty line).
function M.lines(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" and empty(buf) then
    return {}
  end
  return lines
end

--- The buffer's text as Neovim would write it: its lines joined by its 'fileformat', the final
--- newline per 'eol'/'fixeol', the byte order mark per 'bomb'.
function M.text(buf)
  local bom = vim.bo[buf].bomb and BOM or ""
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" and empty(buf) then
    -- Everything deleted (ggdG): Neovim writes no line at all, not an empty one.
    return bom
  end
  local sep = separators[vim.bo[buf].fileformat] or "\n"
  local text = table.concat(lines, sep)
  if vim.bo[buf].eol or (vim.bo[buf].fixeol and not vim.bo[buf].binary) then
    text = text .. sep
  end
  return bom .. text
end

--- The proposal exactly as the agent sent it: the staged bytes, with their byte order mark
--- back on (the core kept it aside). nil and why when the staged file cannot be read.
function M.proposal(r)
  local fd, err = vim.uv.fs_open(r.proposal_file, "r", 0)
  if not fd then
    return nil, err
  end
  local bytes = vim.uv.fs_read(fd, r.new.bytes, 0)
  vim.uv.fs_close(fd)
  if not bytes or #bytes ~= r.new.bytes then
    return nil, "the staged proposal is incomplete"
  end
  return (r.new.bom and BOM or "") .. bytes
end

--- nil when `text` is valid UTF-8, else where it stops being: "line N".
function M.invalid_utf8(text)
  local native = require("pi-ide.core.native").get()
  local at = native and native.utf8_error(text)
  if not at then
    return nil
  end
  local _, breaks = text:sub(1, at):gsub("\n", "")
  return ("line %d"):format(breaks + 1)
end

return M
