-- What the tests of pending changes (issue 50) ask of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

--- The entry of info().pending for `path` (absolute), or nil while it has none.
function M.entry(path)
  for _, change in ipairs(require("pi-ide").info().pending or {}) do
    if change.path == path then
      return change
    end
  end
end

return M
