-- Where an ACP chat shows: its conversation and prompt buffers in the chat's windows
-- (window.lua, as Pi's chat), with the same keys; opening or showing one puts it in front.
local log = require("pi-ide.core.log")
local window = require("pi-ide.features.chat.window")

local M = {}

local methods = {}

function methods:prompt_buf()
  if not (self.prompt_nr and vim.api.nvim_buf_is_loaded(self.prompt_nr)) then
    if self.prompt_nr and vim.api.nvim_buf_is_valid(self.prompt_nr) then
      pcall(vim.api.nvim_buf_delete, self.prompt_nr, { force = true })
    end
    self.prompt_nr = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, self.prompt_nr, self:label() .. " prompt")
    vim.bo[self.prompt_nr].filetype = "pi-ide-chat-prompt"
    vim.bo[self.prompt_nr].syntax = "markdown"
    vim.b[self.prompt_nr].completion = false
    vim.b[self.prompt_nr].pi_ide_chat_agent = self.name
    require("pi-ide.features.chat.keys").prompt(self.prompt_nr, self)
    require("pi-ide.features.chat.acp.context").attach(self.prompt_nr)
  end
  return self.prompt_nr
end

function methods:conv_buf()
  local buf = self.view.buf()
  if not vim.b[buf].pi_ide_chat_keys then
    vim.b[buf].pi_ide_chat_keys = true
    vim.b[buf].pi_ide_chat_agent = self.name
    require("pi-ide.features.chat.keys").conversation(buf, self)
  end
  return buf
end

function methods:whole()
  local conv, prompt = window.windows(self.view.buf(), self.prompt_nr or -1)
  return conv ~= nil and prompt ~= nil
end

function methods:visible()
  return self.prompt_nr ~= nil and window.visible(self.view.buf(), self.prompt_nr)
end

--- Shows the chat (starting the agent), in front of the others; `focus`: the cursor goes to
--- the prompt, in Insert mode.
function methods:open(focus)
  if not self:ensure() then
    return false
  end
  require("pi-ide.features.chat.front").set(self.name)
  local here = vim.api.nvim_get_current_win()
  if not self:whole() then
    require("pi-ide.features.chat.front").hide_others(self.name)
    local conv, err = window.open(self:conv_buf(), self:prompt_buf())
    if not conv then
      log.notify("cannot open the chat: " .. tostring(err), vim.log.levels.ERROR)
      return false
    end
    self:changed()
  end
  local _, prompt = window.windows(self.view.buf(), self.prompt_nr)
  if focus and prompt then
    vim.api.nvim_set_current_win(prompt)
    vim.cmd.startinsert({ bang = true })
  elseif not focus and vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
  return true
end

function methods:hide()
  if self.prompt_nr then
    window.hide(self.view.buf(), self.prompt_nr)
  end
end

function methods:toggle()
  if self:whole() then
    self:hide()
  else
    self:open(true)
  end
end

--- Sends what the prompt area holds and empties it; whether it was sent.
function methods:send_prompt_area()
  local buf = self:prompt_buf()
  if self:send(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")) then
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    return true
  end
  return false
end

--- Puts `text` in the prompt area after what it holds (:PiIde ask with a range).
function methods:set_prompt(text)
  window.set_prompt(self.view.buf(), self:prompt_buf(), text)
end

--- Gives the chat class these methods.
---@param Chat PiIde.AcpChat
function M.extend(Chat)
  for name, fn in pairs(methods) do
    Chat[name] = fn
  end
end

return M
