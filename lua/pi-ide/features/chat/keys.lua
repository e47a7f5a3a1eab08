-- The chat's buffer-local keys. In the prompt: <CR> (Normal) and <C-s> (Insert) send, <C-c>
-- aborts. In the conversation: <C-c> aborts, i/a go to the prompt, q hides the chat. `target`:
-- the ACP chat the buffers are (nil: Pi's chat).
local M = {}

-- `method` of the chat the buffer belongs to, with `...`.
local function action(target, method, ...)
  local args = { ... }
  return function()
    if target then
      target[method](target, unpack(args))
    else
      require("pi-ide.features.chat")[method](unpack(args))
    end
  end
end

local function map(buf, modes, lhs, fn, desc)
  vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "pi-ide chat: " .. desc })
end

function M.prompt(buf, target)
  map(buf, "n", "<CR>", action(target, "send_prompt_area"), "send")
  map(buf, "i", "<C-s>", action(target, "send_prompt_area"), "send")
  map(buf, { "n", "i" }, "<C-c>", action(target, "abort"), "abort")
end

function M.conversation(buf, target)
  map(buf, "n", "<C-c>", action(target, "abort"), "abort")
  map(buf, "n", "i", action(target, "open", true), "go to the prompt")
  map(buf, "n", "a", action(target, "open", true), "go to the prompt")
  map(buf, "n", "q", action(target, "hide"), "hide")
end

return M
