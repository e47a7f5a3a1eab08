-- What core calls but does not own, by the part it plays: the agents' registry, the features
-- the server hands events to, the :PiIde subcommands features bring, their lines in :PiIde
-- status. core/ is the bottom layer and never requires agents/ or features/ (tests/layout.rs):
-- the top layer says which module plays each part (lua/pi-ide/wiring.lua), by its path. Paths,
-- not modules, and not registration calls from the features themselves: a feature is loaded
-- the first time it is used, so declaring must load nothing; a part is required here the first
-- time core calls it, as it was before.
local M = {}

local declared = { parts = {}, commands = {}, status = {} }

--- The top layer's declaration: { parts = { [part] = path }, commands = { [subcommand] = path },
--- status = { { part, always? } } }.
function M.declare(d)
  declared = d
end

--- The module that plays `part`, loaded if it is not yet.
function M.get(part)
  local path = declared.parts[part]
  if not path then
    error(("pi-ide.nvim: no module plays the part '%s' (lua/pi-ide/wiring.lua declares them)"):format(part), 2)
  end
  return require(path)
end

--- The module that plays `part` if it is loaded already, else nil.
function M.loaded(part)
  return package.loaded[declared.parts[part]]
end

--- The module whose `commands[name]` is subcommand `name`, when a feature brings it.
function M.command_module(name)
  return declared.commands[name]
end

--- The names of the subcommands features bring.
function M.command_names()
  return vim.tbl_keys(declared.commands)
end

--- The parts with lines in :PiIde status, in order: { part, always? } (not `always`: only once
--- its module is loaded; before, it has nothing to say).
function M.status()
  return declared.status
end

return M
