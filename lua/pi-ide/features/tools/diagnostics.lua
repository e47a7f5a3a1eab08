-- getDiagnostics {uri?}: what vim.diagnostic holds, keyed by file URI, in the shape the Pi
-- extension reads (zero-based lines, UTF-16 characters). It is called before every model call
-- and waited for without a timeout, so it must always answer, and fast: the core answers it
-- from a snapshot this file keeps current (attach), and only asks here (getDiagnostics) while
-- the snapshot is behind a change.
local buffers = require("pi-ide.core.buffers")

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

local function items_of(buf, list)
  local lines, items = {}, {}
  for i, d in ipairs(list) do
    items[i] = convert(buf, d, lines)
  end
  return items
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
      out[uri] = items_of(buf, list)
    end
  end
  return out
end

-- The snapshot in the core: buffers whose diagnostics changed are converted once per turn of
-- the loop; the core is told at once that something changed, so until then it asks
-- getDiagnostics.
local log = require("pi-ide.core.log")
local native, augroup
local pending = {} -- buf -> true

local function entry(buf)
  if not vim.api.nvim_buf_is_valid(buf) then
    return { buf = buf }
  end
  local uri = buffers.uri(buf)
  local list = uri and vim.diagnostic.get(buf) or {}
  if #list == 0 then
    return { buf = buf }
  end
  local items = items_of(buf, list)
  local path = vim.api.nvim_buf_get_name(buf)
  local real = vim.uv.fs_realpath(path)
  return { buf = buf, uri = uri, path = path, real = real ~= path and real or nil, items = vim.json.encode(items) }
end

local function sync()
  if not native then
    return
  end
  local as_of = native.diagnostics_generation()
  local list = {}
  for buf in pairs(pending) do
    table.insert(list, entry(buf))
  end
  pending = {}
  native.diagnostics_update(list, as_of)
end

local flush = require("pi-ide.core.schedule").once(log.guard("diagnostics snapshot", sync))

local function changed(buf)
  -- No vim.diagnostic loaded: there are no diagnostics, and none to take away.
  if not native or not package.loaded["vim.diagnostic"] then
    return
  end
  native.diagnostics_touch()
  pending[buf] = true
  flush()
end

--- Starts keeping the core's snapshot current (from the server's start to its stop).
function M.attach(mod)
  native = mod
  augroup = vim.api.nvim_create_augroup("PiIdeDiagnostics", { clear = true })
  vim.api.nvim_create_autocmd({ "DiagnosticChanged", "BufWipeout", "BufFilePost" }, {
    group = augroup,
    callback = log.guard("diagnostics snapshot", function(ev)
      changed(ev.buf)
    end),
  })
  -- What exists already (nothing, while Neovim has not loaded vim.diagnostic: loading it
  -- would cost startup several milliseconds).
  if package.loaded["vim.diagnostic"] then
    native.diagnostics_touch()
    for _, d in ipairs(vim.diagnostic.get(nil)) do
      pending[d.bufnr] = true
    end
    flush()
  end
end

function M.detach()
  if augroup then
    pcall(vim.api.nvim_del_augroup_by_id, augroup)
  end
  native, augroup, pending = nil, nil, {}
end

function M.getDiagnostics(args)
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
