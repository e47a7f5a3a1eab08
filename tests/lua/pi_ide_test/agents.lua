-- What tests/agents/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

-- Launched agents --------------------------------------------------------------------------

--- The agent `name`'s terminal: its buffer, job, and the window showing it in this tab (0:
--- none); nil when it has no buffer.
function M.terminal(name)
  local t = require("pi-ide.features.terminal")
  local buf = t.buffer(name)
  if not buf then
    return vim.NIL
  end
  local win = vim.fn.bufwinid(buf)
  return {
    buf = buf,
    job = vim.b[buf].terminal_job_id,
    win = win,
    current = vim.api.nvim_get_current_buf() == buf,
    running = t.is_running(name),
    width = win > 0 and vim.api.nvim_win_get_width(win) or 0,
    float = win > 0 and vim.api.nvim_win_get_config(win).relative ~= "",
  }
end

-- The library's pages (tests/agents/lifecycle.rs) ------------------------------------------

--- KiB of the library's read-only mappings (code, constants) resident in this Neovim.
function M.resident_read_only_kib()
  local kib, ours = 0, false
  for line in io.lines("/proc/self/smaps") do
    local perms = line:match("^%x+%-%x+ (%S+)")
    if perms then
      ours = line:find("libpi_ide", 1, true) ~= nil and not perms:find("w", 1, true)
    elseif ours then
      kib = kib + tonumber(line:match("^Rss:%s+(%d+)") or 0)
    end
  end
  return kib
end

--- A Lua file's code without its comments, and with every string emptied.
local function code_of(text)
  text = text:gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%[(=*)%[.-%]%1%]", '""')
  text = text:gsub('"[^"\n]-\\\\"', '"'):gsub("'[^'\n]-\\\\'", "'")
  text = text:gsub('"[^"\n]*"', '""'):gsub("'[^'\n]*'", "''")
  return (text:gsub("%-%-[^\n]*", ""))
end

--- The decimal literals in the plugin's modules loaded now: { found = { "module: literal" },
--- scanned = how many modules }.
function M.decimal_literals()
  local found, scanned = {}, 0
  for name in pairs(package.loaded) do
    if name == "pi-ide" or name:find("^pi%-ide%.") then
      local rel = "lua/" .. name:gsub("%.", "/")
      local path = vim.api.nvim_get_runtime_file(rel .. ".lua", false)[1]
        or vim.api.nvim_get_runtime_file(rel .. "/init.lua", false)[1]
      scanned = scanned + 1
      local code = code_of(table.concat(vim.fn.readfile(path), "\n"))
      for literal in code:gmatch("%f[%w_.]%d*%.%d+") do
        table.insert(found, name .. ": " .. literal)
      end
      for literal in code:gmatch("%f[%w_.]%d+[eE][-+]?%d+") do
        table.insert(found, name .. ": " .. literal)
      end
    end
  end
  return { found = found, scanned = scanned }
end

return M
