-- getDiagnostics {uri?}: what vim.diagnostic holds, keyed by file URI, in the shape the Pi
-- extension reads (zero-based lines, UTF-16 characters). It is called before every model call
-- and waited for without a timeout, so it must always answer, and fast.
local buffers = require("pi-ide.buffers")

local M = {}

local severity_names = { "Error", "Warning", "Information", "Hint" }

local function position(buf, lines, lnum, col)
  local line = lines[lnum]
  if line == nil and vim.api.nvim_buf_is_loaded(buf) then
    line = vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1] or false
    lines[lnum] = line
  end
  return { line = lnum, character = buffers.utf16_col(line or nil, col or 0) }
end

local function convert(buf, d, lines)
  local lsp = type(d.user_data) == "table" and type(d.user_data.lsp) == "table" and d.user_data.lsp or nil
  local range = lsp and type(lsp.range) == "table" and lsp.range
    or {
      start = position(buf, lines, d.lnum, d.col),
      ["end"] = position(buf, lines, d.end_lnum or d.lnum, d.end_col or d.col),
    }
  return {
    severity = severity_names[d.severity] or "Error",
    message = d.message,
    source = d.source,
    code = d.code,
    range = range,
  }
end

local function collect(bufnr)
  local out = {}
  local by_buf = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    by_buf[d.bufnr] = by_buf[d.bufnr] or {}
    table.insert(by_buf[d.bufnr], d)
  end
  for buf, list in pairs(by_buf) do
    local uri = vim.api.nvim_buf_is_valid(buf) and buffers.uri(buf)
    if uri then
      local lines = {}
      local items = {}
      for i, d in ipairs(list) do
        items[i] = convert(buf, d, lines)
      end
      out[uri] = items
    end
  end
  return out
end

function M.handle(args)
  if type(args.uri) == "string" and args.uri ~= "" then
    local buf = buffers.find(args.uri)
    if not buf then
      return {} -- a file that is not open has no diagnostics here: an empty answer, not an error
    end
    return collect(buf)
  end
  return collect(nil)
end

return M
