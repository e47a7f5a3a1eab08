-- pi-ide.nvim: the editor side of the pi-ide protocol. `require("pi-ide").setup(opts)` is
-- optional; with no configuration the server starts when Neovim does.
local M = {}

--- Applies options (see :help pi-ide-options). Unknown or ill-typed keys are named in an error
--- message and ignored.
function M.setup(opts)
  local config = require("pi-ide.config")
  config.setup(opts)
  local server = require("pi-ide.server")
  if server.running() then
    require("pi-ide.log").set_level(config.values.log_level)
    require("pi-ide.suggest.keys").apply()
  end
end

function M.start()
  return require("pi-ide.server").start()
end

function M.stop()
  return require("pi-ide.server").stop()
end

--- A table describing the server (running, port, lockfile, clients, parked).
function M.status()
  return require("pi-ide.server").status()
end

--- Called by plugin/pi-ide.lua once Neovim has started.
function M.autostart()
  if require("pi-ide.config").values.auto_start and not require("pi-ide.server").running() then
    M.start()
  end
end

return M
