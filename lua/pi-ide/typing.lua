-- When a key was typed last, watched while the server runs: a review waits for a quiet
-- keyboard before it takes the screen from someone typing into a terminal (diff/init.lua), be
-- it an agent started by :PiIde open or one in the user's own :terminal.
local M = {}

local ns = vim.api.nvim_create_namespace("pi-ide.typing")
local last = 0

function M.attach()
  vim.on_key(function()
    last = vim.uv.now()
  end, ns)
end

function M.detach()
  vim.on_key(nil, ns)
end

--- Whether a key was typed in the last `ms` milliseconds.
function M.within(ms)
  return vim.uv.now() - last < ms
end

return M
