-- Any MCP client (Codex, Gemini CLI, opencode, Claude Desktop, Cursor, mcporter, Pi's MCP
-- adapter): it runs the pi-ide-mcp program (built beside the library), which finds this Neovim
-- by a record of ours and relays over a private Unix socket in stdpath("run"). Served from the
-- start (option mcp); not launched from Neovim: the client starts the program. Each client's
-- config is in configs.lua, :PiIde mcp in command.lua.
local M = {
  name = "mcp",
  label = "MCP clients",
  short = "MCP",
  install = "cargo build --release (it builds target/release/pi-ide-mcp)",
  health_title = "MCP clients (pi-ide-mcp)",
}

local opt = require("pi-ide.core.options").opt

-- The tools off unless the user turns them on, by the option that does.
local OPT_IN = { save_document = "saveDocument", close_tab = "close_tab" }

M.options = {
  -- Let any MCP client reach this Neovim through the pi-ide-mcp program (:PiIde mcp shows how;
  -- see :help pi-ide-mcp); off, no socket and no record are made. A table turns it on with
  -- tools that are off otherwise: { save_document = true } lets the model save your unsaved
  -- changes of a file, { close_tab = true } take back its own review.
  -- @type boolean|{ save_document?: boolean, close_tab?: boolean }
  mcp = opt(true, { "boolean", "table" }, function(v)
    if type(v) ~= "table" then
      return
    end
    for k, val in pairs(v) do
      if not OPT_IN[k] then
        return ("has no option %s (only save_document, close_tab)"):format(tostring(k))
      elseif type(val) ~= "boolean" then
        return ("%s must be true or false"):format(k)
      end
    end
  end),
}

function M.serve(values)
  if not values.mcp then
    return nil
  end
  local tools = {}
  for option, tool in pairs(OPT_IN) do
    if type(values.mcp) == "table" and values.mcp[option] then
      table.insert(tools, tool)
    end
  end
  return { socket_dir = vim.fn.stdpath("run"), nvim = vim.v.servername, tools = tools }
end

--- The pi-ide-mcp program beside the library, if it is there.
function M.program()
  local path = vim.fs.joinpath(require("pi-ide.core.native").root, "target", "release", "pi-ide-mcp")
  return vim.fn.executable(path) == 1 and path or nil, path
end

local function clients(st)
  return vim.tbl_filter(function(c)
    return c.agent == M.name
  end, st.clients or {})
end

-- Its own subcommand: :PiIde mcp [client] (command.lua).
M.commands = {
  mcp = {
    run = function(opts)
      require("pi-ide.agents.mcp.command").run(opts.fargs[2])
    end,
    complete = function(arglead, n)
      return n == 1 and vim.tbl_filter(function(w)
        return w:sub(1, #arglead) == arglead
      end, require("pi-ide.agents.mcp.command").names()) or {}
    end,
  },
}

function M.status_line(st)
  local side = (st.served or {}).mcp
  if (st.refused or {}).mcp then
    return "  mcp: not served: " .. st.refused.mcp
  elseif not side then
    return "  mcp: off (setup({ mcp = true }))"
  end
  return ("  mcp: socket %s, %d client%s"):format(side.socket, #clients(st), #clients(st) == 1 and "" or "s")
end

---@param info table require("pi-ide").info()
function M.health(info)
  local h = vim.health
  local side = info.running and (info.served or {}).mcp
  if not require("pi-ide.core.config").values.mcp then
    return h.info("off (option mcp)")
  elseif info.running and (info.refused or {}).mcp then
    return h.error("not served: " .. info.refused.mcp)
  elseif not side then
    return h.warn("on, but the running server was started without it: :PiIde stop, then :PiIde start")
  end
  local stat = vim.uv.fs_stat(side.socket)
  if stat and stat.type == "socket" then
    h.ok(("socket %s; record %s"):format(side.socket, side.lockfile))
  else
    h.error("the socket is gone: " .. side.socket .. " (restart the server)")
  end
  local program, path = M.program()
  if program then
    h.ok("program " .. program)
  else
    h.warn(("no program at %s: build it with %s"):format(path, M.install))
  end
end

return M
