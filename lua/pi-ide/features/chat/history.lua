-- A session's messages (get_messages) drawn as the conversation: what a resumed session
-- shows. The same shapes as live: prompts, answers, thinking and tool blocks.
local view = require("pi-ide.features.chat.view").of("pi")

local M = {}

local function text_of(content)
  if type(content) == "string" then
    return content
  end
  local parts = {}
  for _, c in ipairs(type(content) == "table" and content or {}) do
    if type(c) == "table" and c.type == "text" and type(c.text) == "string" then
      table.insert(parts, c.text)
    end
  end
  return table.concat(parts, "\n")
end

local function lines_of(text, cap)
  local lines = vim.split(text, "\n", { plain = true })
  if #lines > cap then
    local more = #lines - cap
    return vim.list_slice(lines, 1, cap), more
  end
  return lines, 0
end

local function assistant(m)
  for _, c in ipairs(type(m.content) == "table" and m.content or {}) do
    if c.type == "text" then
      view.stream("text", c.text or "")
    elseif c.type == "thinking" then
      view.stream("thinking", c.thinking or "")
    elseif c.type == "toolCall" then
      view.tool_start(c.id, c.name, c.arguments)
    end
  end
end

--- Draws `messages` (AgentMessage objects) at the end of the conversation.
function M.render(messages)
  local cap = require("pi-ide.core.config").values.chat.tool_lines
  for _, m in ipairs(messages) do
    if m.role == "user" then
      view.user(text_of(m.content))
    elseif m.role == "assistant" then
      assistant(m)
    elseif m.role == "toolResult" then
      local lines, more = lines_of(text_of(m.content), cap)
      view.tool_end(m.toolCallId, lines, more, m.isError == true)
    end
  end
end

return M
