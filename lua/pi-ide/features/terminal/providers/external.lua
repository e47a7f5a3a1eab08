-- A command of the user's that runs the agent outside Neovim (a tmux or WezTerm pane): the
-- template's %s becomes the agent's whole command line as one shell word, so that
--   tmux split-window -h %s
-- gives tmux `cd '<cwd>' && exec env 'PI_IDE_LOCK_DIR=…' 'pi'`. Neovim does not track it.
local M = {}

local function quote(s)
  return "'" .. s:gsub("'", [['\'']]) .. "'"
end

--- The agent's command line for sh: into its folder, with its environment.
function M.command_line(spec)
  local words = { "cd", quote(spec.cwd), "&&", "exec", "env" }
  local env = spec.env or {}
  local names = vim.tbl_keys(env)
  table.sort(names)
  for _, k in ipairs(names) do
    table.insert(words, quote(k .. "=" .. env[k]))
  end
  for _, a in ipairs(spec.cmd) do
    table.insert(words, quote(a))
  end
  return table.concat(words, " ")
end

function M.open(spec)
  local template = require("pi-ide.core.config").values.terminal.external
  if not template then
    return nil, 'terminal.provider is "external" but terminal.external is not set (e.g. "tmux split-window -h %s")'
  end
  local line = template:gsub("%%s", function()
    return quote(M.command_line(spec))
  end)
  local err = {}
  local job = vim.fn.jobstart({ "sh", "-c", line }, {
    cwd = spec.cwd,
    stderr_buffered = true,
    on_stderr = function(_, data)
      err = data
    end,
    on_exit = function(_, code)
      if code ~= 0 then
        require("pi-ide.core.log").notify(
          ("the external terminal command failed (exit %d): %s\n  %s"):format(code, line, table.concat(err, "\n  ")),
          vim.log.levels.ERROR
        )
      end
    end,
  })
  if job <= 0 then
    return nil, "cannot run sh for the external terminal command"
  end
  return { external = true }
end

return M
