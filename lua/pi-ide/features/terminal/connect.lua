-- What makes an agent launched from Neovim connect to this Neovim, with no picker, even when
-- other editors serve the same folder:
--   pi       a private PI_IDE_LOCK_DIR holding only our lockfile (the core keeps it in step
--            with the real one and removes it on stop)
--   claude   CLAUDE_CODE_SSE_PORT, which names our port; the core serves Claude Code from then
--            on (its lockfile, where Claude reads the token, and its auth header)
--   copilot  nothing selects an editor: the CLI connects to a lockfile whose folder is its cwd.
--            The core serves it from then on; when another editor serves the same folder we
--            say how to pick this one (/ide in the CLI).
local log = require("pi-ide.core.log")

local M = {}

-- The agents that were given a connection: redone after a restart of the server.
local given = {}

local function native()
  return require("pi-ide.core.native").get()
end

--- The private lock folder of this Neovim, in Neovim's run folder (private to the user).
function M.pi_lock_dir()
  return vim.fs.joinpath(vim.fn.stdpath("run"), "pi-ide-pi." .. vim.fn.getpid())
end

-- Lockfiles a Neovim that crashed with our pid left in that folder: Pi must see ours alone.
local function sweep(dir, port)
  for _, file in ipairs(vim.fn.glob(vim.fs.joinpath(dir, "*.lock"), true, true)) do
    if vim.fs.basename(file) ~= port .. ".lock" then
      os.remove(file)
    end
  end
end

local function pi()
  local dir = M.pi_lock_dir()
  sweep(dir, require("pi-ide.core.server").status().port)
  local ok, err = pcall(native().serve, "pi", { lock_dir = dir })
  if not ok then
    return nil, "cannot write the lockfile Pi will read: " .. tostring(err)
  end
  return { PI_IDE_LOCK_DIR = dir }
end

local function claude(agent_env)
  local ok, err = pcall(native().serve, "claude", vim.empty_dict())
  -- An env of the user's that moves Claude's config folder moves where it reads the lockfile.
  if ok and agent_env.CLAUDE_CONFIG_DIR then
    local dir = vim.fn.fnamemodify(vim.fs.joinpath(agent_env.CLAUDE_CONFIG_DIR, "ide"), ":p")
    ok, err = pcall(native().serve, "claude", { lock_dir = dir })
  end
  if not ok then
    return nil, "cannot serve Claude Code: " .. tostring(err)
  end
  return { CLAUDE_CODE_SSE_PORT = tostring(require("pi-ide.core.server").status().port) }
end

-- Other live editors whose Copilot lockfile names `cwd` (the CLI may pick any of them).
local function other_copilot_editors(our_lock, cwd)
  local names = {}
  local dir = vim.fs.dirname(our_lock)
  for _, file in ipairs(vim.fn.glob(vim.fs.joinpath(dir, "*.lock"), true, true)) do
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

local function copilot(_, cwd)
  local opts = require("pi-ide.core.config").copilot() or { trust_workspace = false }
  opts.socket_dir = vim.fn.stdpath("run")
  local ok, side = pcall(native().serve, "copilot", opts)
  if not ok then
    return nil, "cannot serve the Copilot CLI: " .. tostring(side)
  end
  local others = other_copilot_editors(side.lockfile, cwd)
  if #others > 0 then
    log.notify(
      ("%s also serves this folder, and the Copilot CLI may connect to it instead: then type /ide in Copilot and pick %q"):format(
        table.concat(others, ", "),
        require("pi-ide.core.server").status().ide_name
      ),
      vim.log.levels.WARN
    )
  end
  return {}
end

local by_agent = { pi = pi, claude = claude, copilot = copilot }

--- Starts the server if it is off, and returns the environment that connects `agent` to it.
---@return table<string, string>? env, string? err
function M.env_for(agent, agent_env, cwd)
  local server = require("pi-ide.core.server")
  if not server.running() and not server.start() then
    return nil, "the server could not start (see above)"
  end
  local env, err = by_agent[agent](agent_env, cwd)
  if env then
    given[agent] = agent_env
  end
  return env, err
end

--- After a restart of the server: the same connection again for agents still running.
--- `running(agent)` says which are. Claude Code was told a port that is gone.
function M.restore(running)
  for agent, agent_env in pairs(given) do
    if running(agent) then
      local _, err = by_agent[agent](agent_env, vim.fn.getcwd())
      if err then
        log.notify(err, vim.log.levels.WARN)
      elseif agent == "claude" then
        log.notify("the server restarted on another port: Claude Code started before cannot find it; restart it (:PiIde open claude after exiting it)", vim.log.levels.WARN)
      end
    else
      given[agent] = nil
    end
  end
end

return M
