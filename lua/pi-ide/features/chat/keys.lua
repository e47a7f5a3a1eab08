-- The chat's buffer-local keys. In the prompt: <CR> (Normal) and <C-s> (Insert) send, <C-c>
-- aborts; a prompt sent from Insert mode leaves it (a review the agent opens waits while the
-- user is in Insert mode, and would wait unseen behind `-- INSERT --`). In the conversation: <C-c> aborts, i/a go to the prompt, q hides the chat. `target`:
-- the ACP chat the buffers are (nil: Pi's chat).
local M = {}

-- `method` of the chat the buffer belongs to, with `...`.
local function action(target, method, ...)
  local args = { ... }
  return function()
    if target then
      return target[method](target, unpack(args))
    else
      return require("pi-ide.features.chat")[method](unpack(args))
    end
  end
end

-- Sends the prompt from Insert mode, and leaves Insert mode once it is sent.
local function send_from_insert(target)
  local send = action(target, "send_prompt_area")
  return function()
    if send() then
      vim.cmd.stopinsert()
    end
  end
end

local function map(buf, modes, lhs, fn, desc)
  vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "pi-ide chat: " .. desc })
end

function M.prompt(buf, target)
  map(buf, "n", "<CR>", action(target, "send_prompt_area"), "send")
  map(buf, "i", "<C-s>", send_from_insert(target), "send")
  map(buf, { "n", "i" }, "<C-c>", action(target, "abort"), "abort")
end

function M.conversation(buf, target)
  map(buf, "n", "<C-c>", action(target, "abort"), "abort")
  map(buf, "n", "i", action(target, "open", true), "go to the prompt")
  map(buf, "n", "a", action(target, "open", true), "go to the prompt")
  map(buf, "n", "q", action(target, "hide"), "hide")
end

return M
