-- Claude Code: pi-ide's wire format with its own header and lockfile folder. Served from the
-- start with `claude_code = true`, or once Neovim launches it: it is told our port
-- (CLAUDE_CODE_SSE_PORT) and reads the token from our lockfile in its folder.
local M = {
  name = "claude",
  label = "Claude Code",
  short = "Claude",
  install = "npm i -g @anthropic-ai/claude-code",
  cmd = { "claude" },
  after_restart = "the server restarted on another port: Claude Code started before cannot find it; restart it (:PiIde open claude after exiting it)",
  health_title = "Claude Code",
  -- In the chat (:PiIde chat claude): ACP through Zed's adapter, which runs Claude Code.
  acp = {
    cmd = { "claude-agent-acp" },
    install = "npm i -g @agentclientprotocol/claude-agent-acp",
    mcp = "stdio",
  },
}

local opt = require("pi-ide.core.options").opt

M.options = {
  -- Also serve Claude Code (same wire format): a second lockfile in $CLAUDE_CONFIG_DIR/ide
  -- (or ~/.claude/ide) and its x-claude-code-ide-authorization header. See :help
  -- pi-ide-claude-code.
  claude_code = opt(false, { "boolean" }),
}

function M.serve(values)
  return values.claude_code and vim.empty_dict() or nil
end

---@param launch PiIde.Launch
function M.connect(launch)
  local agents = require("pi-ide.agents")
  local side, err = agents.serve("claude")
  -- An env of the user's that moves Claude's config folder moves where it reads the lockfile.
  if side and launch.env.CLAUDE_CONFIG_DIR then
    local dir = vim.fn.fnamemodify(vim.fs.joinpath(launch.env.CLAUDE_CONFIG_DIR, "ide"), ":p")
    side, err = agents.serve("claude", { lock_dir = dir })
  end
  if not side then
    return nil, err
  end
  return { CLAUDE_CODE_SSE_PORT = tostring(require("pi-ide.core.server").status().port) }
end

function M.status_line(st)
  local side = (st.served or {}).claude
  return side and ("  claude code: lockfile %s"):format(side.lockfile)
    or "  claude code: off (setup({ claude_code = true }), or :PiIde open claude)"
end

function M.health(info)
  local h = vim.health
  local side = (info.served or {}).claude
  if require("pi-ide.core.config").values.claude_code then
    h.ok("Claude Code compatibility on" .. (side and (": " .. side.lockfile) or ""))
  elseif side then
    h.ok("Claude Code served for :PiIde open claude: " .. side.lockfile)
  else
    h.info("Claude Code compatibility off (option claude_code; :PiIde open claude serves it for its launch)")
  end
end

return M
