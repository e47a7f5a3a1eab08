-- Logging to stdpath("log")/pi-ide.log, shared with the Rust core. A message below the level is
-- never formatted: each function checks one number first.
local M = {}

M.levels = { off = 0, error = 1, warn = 2, info = 3, debug = 4, trace = 5 }
local current = M.levels.info
local path

function M.path()
  path = path or (vim.fn.stdpath("log") .. "/pi-ide.log")
  return path
end

local function write(name, fmt, ...)
  local msg = select("#", ...) > 0 and fmt:format(...) or fmt
  local native = require("pi-ide.core.native").get()
  if native then
    native.log(name, msg)
    return
  end
  -- Before the library is loaded (or when it cannot be), write the line ourselves.
  local f = io.open(M.path(), "a")
  if f then
    f:write(("%s %-5s [lua] %s\n"):format(os.date("!%Y-%m-%dT%H:%M:%SZ"), name:upper(), msg))
    f:close()
  end
end

function M.set_level(name)
  current = M.levels[name] or current
  local native = require("pi-ide.core.native").get()
  if native then
    -- The core creates the folder if needed.
    native.log_configure(M.path(), name)
  end
end

function M.enabled(name)
  return M.levels[name] <= current and current > 0
end

for name, n in pairs(M.levels) do
  if n > 0 then
    M[name] = function(fmt, ...)
      if n <= current then
        write(name, fmt, ...)
      end
    end
  end
end

--- Wraps an autocmd callback (or any callback Neovim calls for us) so that a failure is
--- logged, and shown once per `what`, instead of surfacing as an autocmd error on every event.
local reported = {}
function M.guard(what, fn)
  return function(...)
    local ok, err = xpcall(fn, debug.traceback, ...)
    if not ok then
      M.error("%s failed: %s", what, tostring(err))
      if not reported[what] then
        reported[what] = true
        vim.schedule(function()
          vim.notify(
            ("pi-ide.nvim: internal error in %s (details in :PiIde log; please report it)"):format(what),
            vim.log.levels.WARN,
            { title = "pi-ide.nvim" }
          )
        end)
      end
    end
    -- Never a value: an autocmd callback returning true would delete the autocmd.
  end
end

--- Logs and shows a message the user must see.
function M.notify(msg, level)
  level = level or vim.log.levels.ERROR
  local name = level >= vim.log.levels.ERROR and "error" or level >= vim.log.levels.WARN and "warn" or "info"
  M[name]("%s", msg)
  vim.notify("pi-ide.nvim: " .. msg, level, { title = "pi-ide.nvim" })
end

return M
