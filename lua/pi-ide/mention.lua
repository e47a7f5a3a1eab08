-- at_mentioned: point the agent at a file or a range of lines (`:PiIde send`, `:PiIde add`).
-- Lines on the wire are zero-based; the user types one-based lines.
local log = require("pi-ide.log")

local M = {}

--- Sends {filePath, lineStart?, lineEnd?}. Returns true when at least one client got it.
function M.send(path, first, last)
  local native = require("pi-ide.native").get()
  if not native or not require("pi-ide.server").running() then
    log.notify("the server is not running (:PiIde start)", vim.log.levels.WARN)
    return false
  end
  local params = { filePath = path }
  if first then
    params.lineStart, params.lineEnd = first - 1, (last or first) - 1
  end
  local n = native.notify_clients("at_mentioned", params)
  if n == 0 then
    log.notify("no agent is connected (in Pi, run /ide)", vim.log.levels.WARN)
    return false
  end
  local where = first and ((first == last or not last) and (":" .. first) or (":" .. first .. "-" .. last)) or ""
  vim.notify(("pi-ide.nvim: sent %s%s"):format(vim.fn.fnamemodify(path, ":~:."), where), vim.log.levels.INFO)
  return true
end

--- :[range]PiIde send — the current file, or the given lines of it.
function M.send_command(opts)
  local buf = vim.api.nvim_get_current_buf()
  if not require("pi-ide.buffers").is_file(buf) then
    log.notify("the current buffer is not a file: nothing to send", vim.log.levels.WARN)
    return false
  end
  local path = vim.api.nvim_buf_get_name(buf)
  if opts.range and opts.range > 0 then
    return M.send(path, math.min(opts.line1, opts.line2), math.max(opts.line1, opts.line2))
  end
  return M.send(path)
end

--- :PiIde add <path> [start] [end]
function M.add_command(opts)
  local raw, first, last = opts.fargs[2], opts.fargs[3], opts.fargs[4]
  if not raw then
    log.notify("usage: :PiIde add <path> [start line] [end line]", vim.log.levels.ERROR)
    return
  end
  local path = vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(raw), ":p"))
  local stat = vim.uv.fs_stat(path)
  if not stat then
    log.notify(("no such file or folder: %s"):format(raw), vim.log.levels.ERROR)
    return
  end
  local a, b = tonumber(first), tonumber(last)
  if (first and (not a or a < 1 or a % 1 ~= 0)) or (last and (not b or b < 1 or b % 1 ~= 0)) then
    log.notify("line numbers must be whole numbers from 1", vim.log.levels.ERROR)
    return
  end
  if stat.type == "directory" then
    path = path:gsub("/?$", "/")
    a, b = nil, nil
  end
  if a and b and b < a then
    a, b = b, a
  end
  return M.send(path, a, b or a)
end

return M
