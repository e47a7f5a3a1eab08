-- Codex (OpenAI's CLI). Two ways to meet this Neovim:
-- * its own MCP client (`codex`, `codex exec`): pi-ide-mcp in its config (:PiIde mcp codex), or
--   given on the command line of :PiIde open codex. Codex starts MCP servers with a short
--   environment; the entry passes on the variables that say which Neovim (env_vars). Every tool
--   is annotated, so `codex exec` (approval "never") may call those that write nothing.
-- * the chat (:PiIde chat codex): Zed's codex-acp, its native program (not its npm launcher). It
--   writes files itself after a permission that carries the whole file; the core then sets the
--   file to the text the user accepted. It starts read-only (asks before every edit) but in auto
--   in a folder trusted in Codex: the chat puts it back in read-only. Its shell commands need
--   bubblewrap (`bwrap`) on PATH in read-only mode.
local M = {
  name = "codex",
  label = "Codex",
  short = "Codex",
  install = "npm i -g @openai/codex",
  cmd = { "codex" },
  -- Its MCP client reaches the core through pi-ide-mcp (:checkhealth tells it by its name).
  served_as = "mcp",
}

-- Where the Codex CLI keeps the bubblewrap it bundles, relative to its npm package.
local BUNDLED_BWRAP = {
  "node_modules/@openai/codex-linux-*/vendor/*/codex-resources/bwrap",
  "../codex-linux-*/vendor/*/codex-resources/bwrap",
}

-- Whether the `bwrap` at `path` takes `--argv0` (bubblewrap 0.9.0 and later), by its help, as
-- Codex tells. Without it (Debian 12's 0.8.0, Ubuntu 22.04's) codex-acp runs its sandbox helper
-- inside by the name `codex-linux-sandbox`, from the helper links it puts on PATH, which Codex
-- refuses to make when its home is in the temp folder: its shell then fails with
-- "bwrap: execvp codex-linux-sandbox".
local function takes_argv0(path)
  local ok, done = pcall(function()
    return vim.system({ path, "--help" }, { text = true }):wait(5000)
  end)
  return ok and ((done.stdout or "") .. (done.stderr or "")):find("--argv0", 1, true) ~= nil
end

-- The folder of the bubblewrap the Codex CLI (if installed) bundles; nil when there is none.
local function bundled_bwrap_dir()
  local codex = vim.fn.exepath("codex")
  if codex == "" then
    return nil
  end
  -- codex is a link to <package>/bin/codex.js.
  local package = vim.fs.dirname(vim.fs.dirname(vim.uv.fs_realpath(codex) or codex))
  for _, pattern in ipairs(BUNDLED_BWRAP) do
    local hit = vim.fn.glob(vim.fs.joinpath(package, pattern), true, true)[1]
    if hit and vim.fn.executable(hit) == 1 then
      return vim.fs.dirname(hit)
    end
  end
end

--- The `bwrap` codex-acp would run: { dir = the folder to put first on PATH (nil: the one on
--- PATH will do), why = what fails when none will (nil: none fails) }.
function M.bwrap()
  local on_path = vim.fn.exepath("bwrap")
  if on_path ~= "" and takes_argv0(on_path) then
    return {}
  end
  local dir = bundled_bwrap_dir()
  if dir then
    return { dir = dir }
  elseif on_path == "" then
    return { why = "no bwrap on PATH: its shell commands fail in read-only mode; install bubblewrap, or the Codex CLI (npm i -g @openai/codex), which bundles one" }
  end
  local home = vim.env.CODEX_HOME or vim.fs.joinpath(vim.env.HOME or "", ".codex")
  local tmp = vim.fs.normalize(vim.uv.os_tmpdir() or "/tmp")
  if vim.startswith(vim.fs.normalize(home), tmp .. "/") then
    return { why = ("%s is bubblewrap older than 0.9 and CODEX_HOME is in %s: its shell commands fail; install the Codex CLI (npm i -g @openai/codex), which bundles a newer one, or move CODEX_HOME"):format(on_path, tmp) }
  end
  return {}
end

-- The chat's environment for codex-acp: the bubblewrap its sandbox can run first on PATH; said
-- at once when there is none.
local function acp_env()
  local b = M.bwrap()
  if b.why then
    require("pi-ide.core.log").notify("Codex (chat): " .. b.why, vim.log.levels.WARN)
  end
  return b.dir and { PATH = b.dir .. ":" .. (vim.env.PATH or "") } or {}
end

-- The npm launcher of codex-acp (node) runs the native program as its child and, killed (Neovim
-- gone by SIGKILL: only its child gets the parent-death signal), leaves it running, and that
-- ignores EOF on stdin: the chat runs the native program itself, which then ends with Neovim.
local NATIVE_ACP = "codex-acp-*/bin/codex-acp"

--- The native codex-acp beside the npm launcher `program` names; nil when it is not that.
function M.native_acp(program)
  local launcher = vim.fn.exepath(program)
  local real = launcher ~= "" and vim.uv.fs_realpath(launcher) or nil
  if not (real and real:match("/codex%-acp/bin/codex%-acp%.js$")) then
    return nil
  end
  local package = vim.fs.dirname(vim.fs.dirname(real)) -- .../@zed-industries/codex-acp
  for _, folder in ipairs({ vim.fs.joinpath(package, "node_modules", "@zed-industries"), vim.fs.dirname(package) }) do
    local hit = vim.fn.glob(vim.fs.joinpath(folder, NATIVE_ACP), true, true)[1]
    if hit and vim.fn.executable(hit) == 1 then
      return hit
    end
  end
end

M.acp = {
  cmd = { "codex-acp" },
  install = "npm i -g @zed-industries/codex-acp",
  mcp = "stdio",
  env = acp_env,
  native = M.native_acp,
}

--- :PiIde open codex: this Neovim's tools for that run (config overrides on its command line),
--- the server named by pid, so another Neovim in the same folder is never picked.
function M.launch_args()
  local program = require("pi-ide.agents.mcp").program()
  if not program then
    return {}
  end
  local toml = function(v)
    return (vim.json.encode(v):gsub("\\/", "/"))
  end
  return {
    "-c", "mcp_servers.nvim.command=" .. toml(program),
    "-c", "mcp_servers.nvim.args=" .. toml({ "--nvim", tostring(vim.fn.getpid()) }),
    "-c", "mcp_servers.nvim.tool_timeout_sec=3600",
    "-c", "mcp_servers.nvim.env_vars=" .. toml({ "XDG_RUNTIME_DIR" }),
  }
end

---@param launch PiIde.Launch
function M.connect(launch)
  local mcp = require("pi-ide.agents.mcp")
  if not mcp.program() then
    return nil, "Codex reaches Neovim through pi-ide-mcp, which is not built: " .. mcp.install
  elseif not require("pi-ide.agents").served("mcp") then
    return nil, "Codex reaches Neovim through pi-ide-mcp, which is off: setup({ mcp = true })"
  end
  return vim.empty_dict()
end

return M
