-- Work for the next turn of Neovim's loop, coalesced: asking again before it has run adds nothing.
local M = {}

--- Returns a function that schedules `fn` once; calls made before it runs are folded into it.
function M.once(fn)
  local pending = false
  local function run()
    pending = false
    fn()
  end
  return function()
    if not pending then
      pending = true
      vim.schedule(run)
    end
  end
end

return M
