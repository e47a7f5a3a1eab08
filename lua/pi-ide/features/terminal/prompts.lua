-- Enter typed in an agent's terminal of ours (Terminal mode) sends it a prompt: for checkpoints
-- its turn begins there. An agent told not to ask (an "always" answer, an auto-accept mode), or
-- one whose own edits never reach a review, may write without calling Neovim at all: its turn
-- is recorded anyway, so :PiIde changes lists what it wrote and :PiIde undo can take it back.
-- Keys are only looked at (vim.on_key): nothing is mapped in the user's terminal.
local M = {}

local NS = vim.api.nvim_create_namespace("pi-ide.terminal.prompts")
local agents_by_buf = {} -- terminal buffer -> agent

local function on_key(key)
  if key ~= "\r" then
    return
  end
  local agent = agents_by_buf[vim.api.nvim_get_current_buf()]
  if agent and vim.api.nvim_get_mode().mode == "t" then
    -- Not from inside the key's handling: a checkpoint starts a job and may say things.
    vim.schedule(function()
      require("pi-ide.features.checkpoints").prompt_sent(agent)
    end)
  end
end

--- Watches the terminal buffer `buf` of `agent` for prompts, while it exists.
function M.watch(agent, buf)
  agents_by_buf[buf] = agent
  vim.on_key(on_key, NS)
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      agents_by_buf[buf] = nil
      if next(agents_by_buf) == nil then
        vim.on_key(nil, NS)
      end
    end,
  })
end

return M
