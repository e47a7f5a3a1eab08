-- What makes an agent launched from Neovim connect to this Neovim, with no picker, even when
-- other editors serve the same folder: the server is started if it is off, and the agent's
-- module (lua/pi-ide/agents/) serves it and says which environment tells it where we are.
local log = require("pi-ide.core.log")

local M = {}

-- The launches that were given a connection: redone after a restart of the server.
local given = {} -- key -> { agent, launch }

--- Starts the server if it is off, and returns the environment that connects `agent` to it.
---@param launch PiIde.Launch
---@return table<string, string>? env, string? err
function M.env_for(agent, launch)
  local server = require("pi-ide.core.server")
  if not server.running() and not server.start() then
    return nil, "the server could not start (see above)"
  end
  -- The file the user launches from is the agent's first context. Taken now: its terminal
  -- takes the window before it connects, and a terminal never replaces the last file's state.
  require("pi-ide.features.selection").flush()
  local env, err = require("pi-ide.agents").get(agent).connect(launch)
  if env then
    given[agent .. "\0" .. (launch.tag or "")] = { agent = agent, launch = launch }
  end
  return env, err
end

--- After a restart of the server: the same connection again for launches still running.
--- `running(agent, tag)` says which are; an agent told where the old server was hears why it
--- must be restarted.
function M.restore(running)
  for key, g in pairs(given) do
    if running(g.agent, g.launch.tag) then
      local a = require("pi-ide.agents").get(g.agent)
      local _, err = a.connect(vim.tbl_extend("force", g.launch, { cwd = vim.fn.getcwd() }))
      if err or a.after_restart then
        log.notify(err or a.after_restart, vim.log.levels.WARN)
      end
    else
      given[key] = nil
    end
  end
end

return M
