-- :PiIde mcp: the config that gives an MCP client this Neovim's tools and reviews, with the
-- absolute path of the pi-ide-mcp program on this machine (each client's is in configs.lua). No token goes in any of them: the program reaches Neovim over a
-- socket only this user's processes can open.
local log = require("pi-ide.core.log")

local M = {}

--- The names :PiIde mcp completes.
function M.names()
  return vim.tbl_map(function(c)
    return c.name
  end, require("pi-ide.agents.mcp.configs").for_program(""))
end

local function program_or_say()
  local agent = require("pi-ide.agents.mcp")
  local program, path = agent.program()
  if not program then
    log.notify(("no pi-ide-mcp at %s: build it with %s"):format(path, agent.install), vim.log.levels.ERROR)
  end
  return program
end

local function lines_of(configs)
  local out = { "Configs for MCP clients (pi-ide-mcp). :PiIde mcp <name> copies one; q closes.", "" }
  for _, c in ipairs(configs) do
    table.insert(out, ("## %s — %s"):format(c.name, c.where))
    vim.list_extend(out, vim.split(c.text, "\n", { plain = true }))
    table.insert(out, "")
  end
  return out
end

-- Every config in a scratch buffer of its own, in a new tab (the user's layout stays).
local function show_all(configs)
  vim.cmd.tabnew()
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
  -- A name without "/": a tabline shortens every folder of a name ("pi-ide://mcp": "p//mcp").
  pcall(vim.api.nvim_buf_set_name, buf, "pi-ide-mcp configs")
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines_of(configs))
  vim.bo[buf].modifiable, vim.bo[buf].filetype = false, "markdown"
  vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, desc = "close" })
end

--- :PiIde mcp [name]: shows every config, or copies one (to "+ when there is a clipboard, and
--- to the unnamed register).
function M.run(name)
  local program = program_or_say()
  if not program then
    return
  end
  local configs = require("pi-ide.agents.mcp.configs").for_program(program)
  if not name then
    return show_all(configs)
  end
  for _, c in ipairs(configs) do
    if c.name == name then
      vim.fn.setreg('"', c.text)
      if vim.fn.has("clipboard") == 1 then
        pcall(vim.fn.setreg, "+", c.text)
      end
      -- Short: a longer line would stop an 80-column screen at a hit-enter prompt.
      return log.notify(("copied the %s config"):format(c.name), vim.log.levels.INFO)
    end
  end
  log.notify(("no MCP client %q (%s)"):format(name, table.concat(M.names(), ", ")), vim.log.levels.ERROR)
end

return M
