-- at_mentioned: point the agent at a file or a range of lines (`:PiIde send`, `:PiIde add`).
-- Lines on the wire are zero-based; the user types one-based lines.
local log = require("pi-ide.core.log")

local M = {}

-- The core, when an agent can be told anything now; else nil, and the user is told why.
local function ready()
  local native = require("pi-ide.core.native").get()
  if not native or not require("pi-ide.core.server").running() then
    log.notify("the server is not running (:PiIde start)", vim.log.levels.WARN)
    return nil
  end
  return native
end

-- Sends {filePath, lineStart?, lineEnd?} quietly; returns how many agents got it.
local function deliver(native, path, first, last)
  local params = { filePath = path }
  if first then
    params.lineStart, params.lineEnd = first - 1, (last or first) - 1
  end
  return native.notify_clients("at_mentioned", params)
end

local function no_agent()
  log.notify("no agent is connected (in Pi, run /ide)", vim.log.levels.WARN)
  return false
end

-- A path as the user reads it: relative to the current folder, or to home.
local function shown(path)
  local rel = vim.fn.fnamemodify(path, ":~:.")
  return (path:match("/$") and not rel:match("/$")) and rel .. "/" or rel
end

--- Sends {filePath, lineStart?, lineEnd?} and says so. Returns true when at least one client got it.
function M.send(path, first, last)
  local native = ready()
  if not native then
    return false
  elseif deliver(native, path, first, last) == 0 then
    return no_agent()
  end
  local where = first and ((first == last or not last) and (":" .. first) or (":" .. first .. "-" .. last)) or ""
  vim.notify(("pi-ide.nvim: sent %s%s"):format(shown(path), where), vim.log.levels.INFO)
  return true
end

--- Sends each path (a whole file or folder) and says so in one message. Returns true when
--- the agents got them.
function M.send_all(paths)
  if #paths == 1 then
    return M.send(paths[1])
  end
  local native = ready()
  if not native then
    return false
  end
  for _, path in ipairs(paths) do
    if deliver(native, path) == 0 then
      return no_agent()
    end
  end
  local names = vim.tbl_map(shown, vim.list_slice(paths, 1, 10))
  local more = #paths > 10 and (", and %d more"):format(#paths - 10) or ""
  vim.notify(
    ("pi-ide.nvim: sent %d entries to the agent: %s%s"):format(#paths, table.concat(names, ", "), more),
    vim.log.levels.INFO
  )
  return true
end

-- In an explorer's buffer, sends the entries under the cursor or in the range: returns true,
-- and whether an agent got them. Returns false elsewhere.
local function send_entries(opts)
  local first, last
  if opts.range and opts.range > 0 then
    first, last = math.min(opts.line1, opts.line2), math.max(opts.line1, opts.line2)
  end
  local paths, why, failed = require("pi-ide.features.explorers").entries(vim.api.nvim_get_current_buf(), first, last)
  if not paths then
    return false
  elseif #paths == 0 then
    log.notify(why, failed and vim.log.levels.ERROR or vim.log.levels.WARN)
    return true, false
  end
  return true, M.send_all(paths)
end

--- :[range]PiIde send — the current file, or the given lines of it; in a file explorer, the
--- entries under the cursor or in the range.
function M.send_command(opts)
  local handled, sent = send_entries(opts)
  if handled then
    return sent
  end
  local buf = vim.api.nvim_get_current_buf()
  if not require("pi-ide.core.buffers").is_file(buf) then
    log.notify("the current buffer is not a file: nothing to send", vim.log.levels.WARN)
    return false
  end
  local path = vim.api.nvim_buf_get_name(buf)
  if opts.range and opts.range > 0 then
    return M.send(path, math.min(opts.line1, opts.line2), math.max(opts.line1, opts.line2))
  end
  return M.send(path)
end

--- :PiIde add <path> [start] [end]; with no path, the explorer's entries (see send_command),
--- or the current file.
function M.add_command(opts)
  local raw, first, last = opts.fargs[2], opts.fargs[3], opts.fargs[4]
  if not raw then
    local handled, sent = send_entries(opts)
    if handled then
      return sent
    elseif require("pi-ide.core.buffers").is_file(vim.api.nvim_get_current_buf()) then
      return M.send_command(opts)
    end
    local usage = "usage: :PiIde add <path> [start line] [end line] (no path: in a file or a file explorer)"
    log.notify(usage, vim.log.levels.ERROR)
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

-- :PiIde send / add, then the agent's terminal when one runs here (terminal.focus_after_send).
local function mention(how)
  return function(opts)
    if M[how](opts) then
      require("pi-ide.features.terminal").after_send()
    end
  end
end

--- Its :PiIde subcommands (core/commands.lua).
M.commands = {
  send = { run = mention("send_command") },
  add = {
    run = mention("add_command"),
    complete = function(arglead, n)
      return require("pi-ide.core.commands").files()(arglead, n)
    end,
  },
}

return M
