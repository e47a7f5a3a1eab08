-- The GitHub Copilot CLI: MCP over HTTP on a Unix socket in stdpath("run"), with its lockfile
-- in $COPILOT_HOME/ide (or ~/.copilot/ide). Served from the start with `copilot = true` (or a
-- table of its options), or once Neovim launches it. Nothing selects an editor for it: it
-- connects to the one whose lockfile names its exact cwd, so when another editor serves the
-- same folder we say how to pick this one (/ide in the CLI). It writes its own proposal after
-- an accept; the core then sets the file to the text the user accepted (its model is not told).
local M = {
  name = "copilot",
  label = "The Copilot CLI",
  short = "Copilot",
  install = "npm i -g @github/copilot",
  cmd = { "copilot" },
  health_title = "GitHub Copilot CLI",
  -- In the chat (:PiIde chat copilot): its own ACP mode. Its session/new takes HTTP MCP servers
  -- only; a stdio one goes on its command line, for that session (--additional-mcp-config).
  acp = {
    cmd = { "copilot", "--acp" },
    mcp = function(server)
      local config = { mcpServers = { [server.name] = { type = "local", command = server.command, args = server.args, tools = { "*" } } } }
      return { "--additional-mcp-config", vim.json.encode(config) }
    end,
  },
}

local opt = require("pi-ide.core.options").opt

M.options = {
  -- Also serve the GitHub Copilot CLI (see :help pi-ide-copilot); off, nothing of it runs (no
  -- socket, no lockfile). A table turns it on with options: trust_workspace = true tells the
  -- CLI the workspace folders are trusted (isTrusted in its lockfile), so it skips its "do you
  -- trust this folder?" prompt. Set it only for folders you trust.
  -- @type boolean|{ trust_workspace?: boolean }
  copilot = opt(false, { "boolean", "table" }, function(v)
    if type(v) ~= "table" then
      return
    end
    for k, val in pairs(v) do
      if k ~= "trust_workspace" then
        return ("has no option %s (only trust_workspace)"):format(tostring(k))
      elseif type(val) ~= "boolean" then
        return "trust_workspace must be true or false"
      end
    end
  end),
}

--- The core's options for serving it: its socket's folder, and trust as configured.
local function options(values)
  local c = values.copilot
  return { socket_dir = vim.fn.stdpath("run"), trust_workspace = type(c) == "table" and c.trust_workspace == true }
end

function M.serve(values)
  return values.copilot and options(values) or nil
end

-- Other live editors whose lockfile in the CLI's folder names `cwd` (it may pick any of them).
local function others_serving(our_lock, cwd)
  local names = {}
  for _, file in ipairs(vim.fn.glob(vim.fs.joinpath(vim.fs.dirname(our_lock), "*.lock"), true, true)) do
    local ok, lock = pcall(function()
      return vim.json.decode(table.concat(vim.fn.readfile(file), "\n"))
    end)
    if ok and type(lock) == "table" and file ~= our_lock and type(lock.pid) == "number"
      and vim.uv.kill(lock.pid, 0) == 0 and vim.tbl_contains(lock.workspaceFolders or {}, cwd) then
      table.insert(names, tostring(lock.ideName))
    end
  end
  return names
end

---@param launch PiIde.Launch
function M.connect(launch)
  local config = require("pi-ide.core.config")
  local side, err = require("pi-ide.agents").serve("copilot", options(config.values))
  if not side then
    return nil, err
  end
  local others = others_serving(side.lockfile, launch.cwd)
  if #others > 0 then
    require("pi-ide.core.log").notify(
      ("%s also serves this folder, and the Copilot CLI may connect to it instead: then type /ide in Copilot and pick %q"):format(
        table.concat(others, ", "),
        require("pi-ide.core.server").status().ide_name
      ),
      vim.log.levels.WARN
    )
  end
  return vim.empty_dict()
end

function M.status_line(st)
  local side = (st.served or {}).copilot
  return side and ("  copilot: socket %s, lockfile %s"):format(side.socket, side.lockfile)
    or "  copilot: off (setup({ copilot = true }))"
end

---@param info table require("pi-ide").info()
function M.health(info)
  local h = vim.health
  local side = require("pi-ide.agents").check_served(info, "copilot", "Copilot CLI")
  if not side then
    return
  end
  -- A launch from Neovim serves it with the option off.
  local values = require("pi-ide.core.config").values
  local why = values.copilot and "on" or "served for :PiIde open copilot"
  local trusted = options(values).trust_workspace and " (workspace trusted)" or ""
  h.ok(("Copilot CLI %s: socket %s, lockfile %s%s"):format(why, side.socket, side.lockfile, trusted))
  local stat = vim.uv.fs_stat(side.socket)
  if not (stat and stat.type == "socket") then
    h.error("the Copilot socket is gone: " .. side.socket .. " (restart the server)")
  end
  local sessions = vim.tbl_filter(function(c)
    return c.agent == "copilot"
  end, info.clients)
  h.info(("%d Copilot session%s connected; the CLI connects on its own when started in one of: %s"):format(
    #sessions,
    #sessions == 1 and "" or "s",
    table.concat(info.workspace_folders, ", ")
  ))
end

return M
