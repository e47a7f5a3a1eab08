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

--- The folder of a `bwrap` codex-acp can run: none needed when one is on PATH; else the one
--- the Codex CLI (if installed) bundles; nil when there is none.
function M.bwrap_dir()
  if vim.fn.executable("bwrap") == 1 then
    return nil
  end
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

-- The chat's environment for codex-acp: a bwrap on PATH when the system has none.
local function acp_env()
  local dir = M.bwrap_dir()
  if dir then
    return { PATH = dir .. ":" .. (vim.env.PATH or "") }
  end
  if vim.fn.executable("bwrap") ~= 1 then
    require("pi-ide.core.log").notify(
      "Codex (chat): no bwrap on PATH: its shell commands fail in read-only mode; install bubblewrap, or the Codex CLI (npm i -g @openai/codex), which bundles one",
      vim.log.levels.WARN
    )
  end
  return {}
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
