-- The chat's buffer-local keys. In the prompt: <CR> (Normal) and <C-s> (Insert) send, <C-c>
-- aborts. In the conversation: <C-c> aborts, i/a go to the prompt, q hides the chat.
local M = {}

local function chat()
  return require("pi-ide.features.chat")
end

local function map(buf, modes, lhs, fn, desc)
  vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "pi-ide chat: " .. desc })
end

local function to_prompt()
  chat().open(true)
end

function M.prompt(buf)
  map(buf, "n", "<CR>", function()
    chat().send_prompt_area()
  end, "send")
  map(buf, "i", "<C-s>", function()
    chat().send_prompt_area()
  end, "send")
  map(buf, { "n", "i" }, "<C-c>", function()
    chat().abort()
  end, "abort")
end

function M.conversation(buf)
  map(buf, "n", "<C-c>", function()
    chat().abort()
  end, "abort")
  map(buf, "n", "i", to_prompt, "go to the prompt")
  map(buf, "n", "a", to_prompt, "go to the prompt")
  map(buf, "n", "q", function()
    chat().hide()
  end, "hide")
end

return M
